import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { loadTenantRegistry, TenantRegistryError, MAX_REGISTRY_BYTES } from '../../src/config/tenant-registry.ts';
import { tenantForToken } from '../../src/tenancy/token-lookup.ts';
import { UsageError } from '../../src/config/flags.ts';
import { registryFixture, type RegistryFixture } from '../tenancy/registry-fixture.ts';

/** Loads the fixture's registry expecting a refusal; asserts it is one line naming the file and the field. */
function refusal(fixture: RegistryFixture, field: string, problem: RegExp): void {
  assert.throws(
    () => loadTenantRegistry(fixture.registryPath, fixture.context),
    (error: Error) => {
      assert.ok(error instanceof TenantRegistryError && error instanceof UsageError, 'a usage error (exit 2)');
      const expectedStart = `--tenant-registry ${fixture.registryPath}: ${field}: `;
      assert.ok(error.message.startsWith(expectedStart), `"${error.message}" starts with "${expectedStart}"`);
      assert.match(error.message.slice(expectedStart.length), problem);
      assert.ok(!error.message.includes('\n'), 'one line');
      return true;
    },
  );
}

function refuses(document: (fixture: RegistryFixture, base: any) => unknown, field: string, problem: RegExp) {
  const fixture = registryFixture();
  const base = fixture.document();
  fixture.write(document(fixture, base) ?? base);
  refusal(fixture, field, problem);
}

describe('tenant registry', () => {
  it('loads a valid registry into an immutable value that never shows a token', () => {
    const fixture = registryFixture();
    const document = fixture.document(2, 2);
    fixture.write(document);
    const registry = loadTenantRegistry(fixture.registryPath, fixture.context);
    assert.equal(registry.version, 1);
    assert.deepEqual(registry.tenants.map((tenant) => tenant.id), document.tenants.map((tenant: any) => tenant.id));
    assert.equal(registry.tenants[1].workspaceRoot, document.tenants[1].workspaceRoot);
    assert.equal(registry.tenants[1].credentials[1].tokenFile, document.tenants[1].credentials[1].tokenFile);
    assert.equal(registry.tenants[1].credentials[1].token, readFileSync(document.tenants[1].credentials[1].tokenFile, 'utf8').trim());
    assert.ok(Object.isFrozen(registry) && Object.isFrozen(registry.tenants[0]) && Object.isFrozen(registry.tenants[0].credentials[0]));
    // what a logger, JSON or console.log would show
    const serialised = JSON.stringify(registry) + inspect(registry, { depth: 10 });
    for (const tenant of registry.tenants) for (const credential of tenant.credentials) assert.ok(!serialised.includes(credential.token));
  });

  it('accepts 256 tenants and refuses 257', () => {
    const fixture = registryFixture();
    fixture.write(fixture.document(256));
    assert.equal(loadTenantRegistry(fixture.registryPath, fixture.context).tenants.length, 256);
    refuses((fixture) => fixture.document(257), 'tenants', /at most 256 entries/);
  });

  it('accepts 16 credentials per tenant and refuses 17', () => {
    const fixture = registryFixture();
    fixture.write(fixture.document(1, 16));
    assert.equal(loadTenantRegistry(fixture.registryPath, fixture.context).tenants[0].credentials.length, 16);
    refuses((fixture) => fixture.document(1, 17), 'tenants[0].credentials', /at most 16 entries/);
    refuses((_, base) => void (base.tenants[1].credentials = []), 'tenants[1].credentials', /at least 1 entry/);
    refuses(() => ({ version: 1, tenants: [] }), 'tenants', /at least 1 entry/);
  });

  it('accepts a token of 32 bytes and refuses one of 31', () => {
    const fixture = registryFixture();
    const document = fixture.document(1);
    document.tenants[0].credentials[0].tokenFile = fixture.tokenFile('x'.repeat(32)).path;
    fixture.write(document);
    assert.equal(loadTenantRegistry(fixture.registryPath, fixture.context).tenants[0].credentials[0].token, 'x'.repeat(32));
    refuses((fixture, base) => void (base.tenants[1].credentials[0].tokenFile = fixture.tokenFile('y'.repeat(31)).path), 'tenants[1].credentials[0].tokenFile', /at least 32 bytes/);
  });

  it('accepts a registry of exactly 1 MiB and refuses one byte more', () => {
    const fixture = registryFixture();
    const text = JSON.stringify(fixture.document(1));
    fixture.write(text + ' '.repeat(MAX_REGISTRY_BYTES - Buffer.byteLength(text)));
    assert.equal(loadTenantRegistry(fixture.registryPath, fixture.context).tenants.length, 1);
    fixture.write(text + ' '.repeat(MAX_REGISTRY_BYTES + 1 - Buffer.byteLength(text)));
    assert.throws(() => loadTenantRegistry(fixture.registryPath, fixture.context), { message: /^--tenant-registry \S+: 1048577 bytes, at most 1048576 allowed$/ });
  });

  it('refuses a registry file that is not private to the server user', () => {
    const fixture = registryFixture();
    fixture.write(fixture.document());
    chmodSync(fixture.registryPath, 0o640);
    assert.throws(() => loadTenantRegistry(fixture.registryPath, fixture.context), { message: `--tenant-registry ${fixture.registryPath}: mode 0640, must be 0600` });
    chmodSync(fixture.registryPath, 0o400);
    assert.throws(() => loadTenantRegistry(fixture.registryPath, fixture.context), /mode 0400, must be 0600/);
    chmodSync(fixture.registryPath, 0o600);
    assert.throws(() => loadTenantRegistry(fixture.registryPath, { ...fixture.context, serverUid: fixture.context.serverUid + 4242 }), /is not owned by the server user/);
    const link = join(fixture.dir, 'link.json');
    symlinkSync(fixture.registryPath, link);
    assert.throws(() => loadTenantRegistry(link, fixture.context), { message: `--tenant-registry ${link}: ${link} is a symlink` });
    assert.throws(() => loadTenantRegistry(fixture.dir, fixture.context), /is not a regular file/);
    assert.throws(() => loadTenantRegistry(join(fixture.dir, 'none.json'), fixture.context), /does not exist/);
    const fifo = join(fixture.dir, 'fifo.json');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    assert.throws(() => loadTenantRegistry(fifo, fixture.context), /is not a regular file/);
  });

  it('refuses token files that break the token-file rules, naming the credential', () => {
    const field = 'tenants[0].credentials[0].tokenFile';
    refuses((_, base) => chmodSync(base.tenants[0].credentials[0].tokenFile, 0o644), field, /^mode 0644, must be 0600$/);
    refuses((fixture, base) => {
      const link = join(fixture.dir, 'secrets', 'link');
      symlinkSync(base.tenants[0].credentials[0].tokenFile, link);
      base.tenants[0].credentials[0].tokenFile = link;
    }, field, /is a symlink/);
    refuses((_, base) => rmSync(base.tenants[0].credentials[0].tokenFile), field, /does not exist/);
    refuses((_, base) => void (base.tenants[0].credentials[0].tokenFile = 'secrets/t1'), field, /must be an absolute path/);
    refuses((fixture, base) => void (base.tenants[0].credentials[0].tokenFile = fixture.tokenFile('white space inside a token of many bytes').path), field, /white space/);
  });

  it('refuses duplicate, nil and non-canonical ids and tokens shared between credentials', () => {
    refuses((_, base) => void (base.tenants[1].id = base.tenants[0].id), 'tenants[1].id', /duplicate id .* \(also tenants\[0\]\.id\)/);
    refuses((_, base) => void (base.tenants[1].credentials[0].id = base.tenants[0].credentials[0].id), 'tenants[1].credentials[0].id', /duplicate id/);
    refuses((_, base) => void (base.tenants[1].credentials[0].tokenFile = base.tenants[0].credentials[0].tokenFile), 'tenants[1].credentials[0].tokenFile', /same token as tenants\[0\]\.credentials\[0\]\.tokenFile/);
    refuses((fixture, base) => {
      const copy = fixture.tokenFile(readFileSync(base.tenants[0].credentials[0].tokenFile, 'utf8').trim());
      base.tenants[1].credentials[0].tokenFile = copy.path;
    }, 'tenants[1].credentials[0].tokenFile', /same token/);
    refuses((_, base) => void (base.tenants[0].id = '00000000-0000-0000-0000-000000000000'), 'tenants[0].id', /nil UUID/);
    refuses((_, base) => void (base.tenants[0].credentials[0].id = '00000000-0000-0000-0000-000000000000'), 'tenants[0].credentials[0].id', /nil UUID/);
    refuses((_, base) => void (base.tenants[0].id = base.tenants[0].id.toUpperCase()), 'tenants[0].id', /canonical lower-case UUID/);
    refuses((_, base) => void (base.tenants[0].credentials[0].id = `{${base.tenants[0].credentials[0].id}}`), 'tenants[0].credentials[0].id', /canonical lower-case UUID/);
    refuses((_, base) => void (base.tenants[0].id = base.tenants[0].id.replaceAll('-', '')), 'tenants[0].id', /canonical lower-case UUID/);
  });

  it('refuses workspace roots that are not canonical existing directories', () => {
    const field = 'tenants[1].workspaceRoot';
    refuses((_, base) => void (base.tenants[1].workspaceRoot = '/'), field, /filesystem root/);
    refuses((_, base) => void (base.tenants[1].workspaceRoot = 'workspaces/w1'), field, /must be an absolute path/);
    refuses((_, base) => void (base.tenants[1].workspaceRoot = `${base.tenants[1].workspaceRoot}/../w1`), field, /must not contain \. or \.\. components/);
    refuses((_, base) => void (base.tenants[1].workspaceRoot = `${base.tenants[1].workspaceRoot}/.`), field, /\. or \.\. components/);
    refuses((_, base) => void (base.tenants[1].workspaceRoot = `${base.tenants[1].workspaceRoot}/`), field, /is not canonical/);
    refuses((_, base) => void (base.tenants[1].workspaceRoot = base.tenants[1].workspaceRoot.replace('/workspaces/', '/workspaces//')), field, /is not canonical/);
    refuses((fixture, base) => {
      const link = join(fixture.dir, 'linked-workspace');
      symlinkSync(base.tenants[1].workspaceRoot, link);
      base.tenants[1].workspaceRoot = link;
    }, field, /is not canonical \(it resolves to /);
    refuses((fixture, base) => void (base.tenants[1].workspaceRoot = join(fixture.dir, 'missing')), field, /does not exist/);
    refuses((_, base) => void (base.tenants[1].workspaceRoot = base.tenants[1].credentials[0].tokenFile), field, /is not a directory/);
  });

  it('refuses workspace roots that overlap each other, server state or credentials', () => {
    refuses((_, base) => {
      const nested = join(base.tenants[0].workspaceRoot, 'inner');
      mkdirSync(nested);
      base.tenants[1].workspaceRoot = nested;
    }, 'tenants[1].workspaceRoot', /overlaps tenants\[0\]\.workspaceRoot/);
    refuses((fixture, base) => void (base.tenants[1].workspaceRoot = join(fixture.dir, 'workspaces')), 'tenants[1].workspaceRoot', /overlaps tenants\[0\]/);
    refuses((fixture, base) => {
      mkdirSync(join(fixture.stateDir, 'project'), { recursive: true });
      base.tenants[0].workspaceRoot = join(fixture.stateDir, 'project');
    }, 'tenants[0].workspaceRoot', /lies inside the state dir/);
    refuses((fixture, base) => void (base.tenants[0].workspaceRoot = fixture.dir), 'tenants[0].workspaceRoot', /contains the state dir/);
    refuses((fixture, base) => {
      const secrets = join(fixture.dir, 'secrets');
      base.tenants[0].workspaceRoot = secrets;
    }, 'tenants[0].workspaceRoot', /contains tenants\[0\]\.credentials\[0\]\.tokenFile/);
    // the registry file inside a root (state dir and tokens elsewhere)
    const fixture = registryFixture();
    const document = fixture.document(1);
    const outside = registryFixture();
    const root = fixture.dir;
    document.tenants[0].workspaceRoot = root;
    document.tenants[0].credentials[0].tokenFile = outside.tokenFile().path;
    fixture.write(document);
    assert.throws(() => loadTenantRegistry(fixture.registryPath, { ...fixture.context, stateDir: outside.stateDir, tenantStateRoot: outside.tenantStateRoot }), /tenants\[0\]\.workspaceRoot: .* contains the registry file/);
    // a tenant state root of its own, inside a workspace root
    fixture.write({ ...document, tenants: [{ ...document.tenants[0], workspaceRoot: join(fixture.dir, 'workspaces') }] });
    assert.throws(
      () => loadTenantRegistry(fixture.registryPath, { ...fixture.context, stateDir: outside.stateDir, tenantStateRoot: join(fixture.dir, 'workspaces', 'w9', 'tenants') }),
      /contains the tenant state root/,
    );
    // the MCP config or the models file inside a root (CONTRACT.md §17: the server's files are unreadable to every tool)
    const mcpConfig = join(fixture.dir, 'workspaces', 'w9', 'mcp.json');
    assert.throws(
      () => loadTenantRegistry(fixture.registryPath, { ...fixture.context, stateDir: outside.stateDir, tenantStateRoot: outside.tenantStateRoot, otherServerFiles: [{ name: 'the MCP config', path: mcpConfig }] }),
      new RegExp(`tenants\\[0\\]\\.workspaceRoot: .* contains the MCP config \\(${mcpConfig}\\)`),
    );
  });

  it('refuses unknown fields at every level, other versions and malformed documents', () => {
    refuses((_, base) => void (base.colour = 'blue'), 'colour', /^unknown field$/);
    refuses((_, base) => void (base.tenants[1].quota = 5), 'tenants[1].quota', /^unknown field$/);
    refuses((_, base) => void (base.tenants[0].credentials[0].token = 'inline secrets are not a thing'), 'tenants[0].credentials[0].token', /^unknown field$/);
    refuses((_, base) => void (base.tenants[0]['odd\nkey'] = 1), 'tenants[0]["odd\\nkey"]', /^unknown field$/);
    refuses((_, base) => void (base.version = 2), 'version', /must be 1/);
    refuses((_, base) => void delete base.version, 'version', /missing/);
    refuses((_, base) => void delete base.tenants[0].workspaceRoot, 'tenants[0].workspaceRoot', /missing/);
    refuses((_, base) => void (base.tenants[0].credentials = {}), 'tenants[0].credentials', /must be an array/);
    refuses(() => [1, 2], '(document)', /must be an object/);
    refuses(() => '{"version": 1,', '(document)', /not valid JSON/);
  });

  it('finds the tenant of a token in constant time and refuses near misses', () => {
    const fixture = registryFixture();
    fixture.write(fixture.document(3, 2));
    const registry = loadTenantRegistry(fixture.registryPath, fixture.context);
    for (const tenant of registry.tenants) {
      for (const credential of tenant.credentials) assert.equal(tenantForToken(registry, credential.token), tenant);
    }
    const token = registry.tenants[1].credentials[0].token;
    const nearMisses = [
      '',
      token.slice(0, -1),
      `${token}x`,
      `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
      token.toUpperCase() === token ? token.toLowerCase() : token.toUpperCase(),
      ` ${token}`,
      `${token}\n`,
    ];
    for (const candidate of nearMisses) assert.equal(tenantForToken(registry, candidate), null, JSON.stringify(candidate));
  });
});
