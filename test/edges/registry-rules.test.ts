/**
 * The tenant registry's rules (CONTRACT.md §11) at their edges, beyond the representative cases of
 * test/config/tenant-registry.test.ts: the token's 32 bytes counted in bytes, after trimming and in
 * any script; white space inside a token in every spelling; the token file's size and exact mode,
 * bit by bit; ids one character from canonical or nil; tokens one byte apart; workspace roots
 * whose names merely start like another root, the state dir or the secrets directory.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTenantRegistry, TenantRegistryError } from '../../src/config/tenant-registry.ts';
import { registryFixture, type RegistryFixture } from '../tenancy/registry-fixture.ts';

/** A registry of two tenants whose first credential's token file is written by `prepare`. */
function load(prepare: (fixture: RegistryFixture, document: any) => void) {
  const fixture = registryFixture();
  const document = fixture.document(2);
  prepare(fixture, document);
  fixture.write(document);
  return () => loadTenantRegistry(fixture.registryPath, fixture.context);
}

function accepted(prepare: (fixture: RegistryFixture, document: any) => void, why: string) {
  assert.doesNotThrow(load(prepare), why);
}

function refused(prepare: (fixture: RegistryFixture, document: any) => void, problem: RegExp, why: string) {
  assert.throws(load(prepare), (error: Error) => error instanceof TenantRegistryError && problem.test(error.message), why);
}

/** Writes `content` as the first credential's token file, exactly (no newline added). */
function tokenContent(content: string | Buffer, mode = 0o600) {
  return (fixture: RegistryFixture, document: any) => {
    const path = document.tenants[0].credentials[0].tokenFile;
    writeFileSync(path, content);
    chmodSync(path, mode);
  };
}

describe('tenant registry rules at their edges', () => {
  it('counts the 32 bytes of a token in bytes of UTF-8, whatever its script', () => {
    for (const [token, bytes] of [['é'.repeat(16), 32], ['€'.repeat(10) + 'xx', 32], ['😀'.repeat(8), 32], ['x'.repeat(33), 33]] as const) {
      assert.equal(Buffer.byteLength(token), bytes);
      accepted(tokenContent(token), `${token.length} characters, ${bytes} bytes`);
    }
    for (const token of ['é'.repeat(15) + 'x', '€'.repeat(10) + 'x', '😀'.repeat(7) + 'xyz', 'x'.repeat(31)]) {
      assert.equal(Buffer.byteLength(token), 31);
      refused(tokenContent(token), /at least 32 bytes/, `${token.length} characters, 31 bytes`);
    }
  });

  it('trims the file before counting: a newline or padding does not make a short token long enough', () => {
    accepted(tokenContent(`${'x'.repeat(32)}\n`), '32 bytes and a newline');
    accepted(tokenContent(`\r\n\t ${'x'.repeat(32)} \r\n`), '32 bytes wrapped in white space');
    refused(tokenContent(`${'x'.repeat(31)}\n`), /at least 32 bytes/, '31 bytes and a newline');
    refused(tokenContent(`  ${'x'.repeat(31)}  `), /at least 32 bytes/, '31 bytes padded to 35');
    refused(tokenContent('\n'.repeat(40)), /at least 32 bytes/, 'only white space');
  });

  it('refuses white space inside a token in every spelling, and accepts the look-alikes that are not white space', () => {
    for (const space of [' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '\u1680', '\u2003', '\u2028', '\u2029', '\u202f', '\u3000', '\ufeff']) {
      refused(tokenContent(`${'a'.repeat(20)}${space}${'b'.repeat(20)}`), /white space/, `U+${space.codePointAt(0)!.toString(16).padStart(4, '0')} inside`);
    }
    for (const visible of ['_', '-', '.', '~', '\u200b', '\u00ad']) {
      accepted(tokenContent(`${'a'.repeat(20)}${visible}${'b'.repeat(20)}`), `U+${visible.codePointAt(0)!.toString(16).padStart(4, '0')} inside`);
    }
  });

  it('reads a token file of 64 KiB and refuses one byte more without reading it', () => {
    accepted(tokenContent('k'.repeat(64 * 1024)), '65,536 bytes');
    refused(tokenContent('k'.repeat(64 * 1024 + 1)), /65537 bytes, at most 65536 allowed/, '65,537 bytes');
  });

  it('demands mode 0600 of a token file exactly: every other permission bit alone is refused', () => {
    accepted(tokenContent('t'.repeat(40), 0o600), '0600');
    for (let bit = 0; bit < 9; bit++) {
      const mode = 0o600 ^ (1 << bit);
      refused(tokenContent('t'.repeat(40), mode), new RegExp(`mode 0${mode.toString(8).padStart(3, '0')}, must be 0600`), `mode 0${mode.toString(8)}`);
    }
  });

  it('tells tokens one byte apart, and one token trimmed alike in two files is shared', () => {
    const base = 'Z'.repeat(40);
    for (const other of [`${base}Y`, base.slice(0, -1) + 'Y', 'Y' + base.slice(1), base.toLowerCase(), `${base}Z`]) {
      accepted((fixture, document) => {
        writeFileSync(document.tenants[0].credentials[0].tokenFile, base);
        writeFileSync(document.tenants[1].credentials[0].tokenFile, other);
      }, `${other} differs from ${base}`);
    }
    refused((fixture, document) => {
      writeFileSync(document.tenants[0].credentials[0].tokenFile, `${base}\n`);
      writeFileSync(document.tenants[1].credentials[0].tokenFile, `  ${base}\r\n`);
    }, /same token as tenants\[0\]\.credentials\[0\]\.tokenFile/, 'the same token, padded differently');
  });

  it('accepts ids one character from nil or from each other, and refuses every non-canonical spelling', () => {
    accepted((_, document) => void (document.tenants[0].id = '00000000-0000-0000-0000-000000000001'), 'one away from nil');
    accepted((_, document) => void (document.tenants[0].credentials[0].id = '10000000-0000-0000-0000-000000000000'), 'one away from nil, at the front');
    accepted((_, document) => void (document.tenants[1].id = document.tenants[0].id.slice(0, -1) + (document.tenants[0].id.endsWith('a') ? 'b' : 'a')), 'one character apart');
    accepted((_, document) => void (document.tenants[1].credentials[0].id = document.tenants[0].id), 'a tenant id reused as a credential id: different namespaces');
    refused((_, document) => void (document.tenants[0].id = '00000000-0000-0000-0000-000000000000'), /nil UUID/, 'nil');
    const spellings = (id: string) => [
      id.replace(/[a-f]/, (letter) => letter.toUpperCase()),
      ` ${id}`,
      `${id}\n`,
      id.slice(0, -1),
      `${id}0`,
      `urn:uuid:${id}`,
      id.replace(/-/, ''),
      id.replace(/^(.{8})-/, '$1_'),
      id.replace(/[0-9a-f]$/, 'g'),
    ];
    for (const field of ['tenant', 'credential'] as const) {
      const fixture = registryFixture();
      const document = fixture.document(2);
      for (const spelling of spellings(field === 'tenant' ? document.tenants[0].id : document.tenants[0].credentials[0].id)) {
        refused((_, fresh) => {
          if (field === 'tenant') fresh.tenants[0].id = spelling;
          else fresh.tenants[0].credentials[0].id = spelling;
        }, /canonical lower-case UUID/, `${field} id ${JSON.stringify(spelling)}`);
      }
    }
  });

  it('tells a root from its look-alikes: siblings whose names start like a root, the state dir or the secrets', () => {
    accepted((fixture, document) => {
      const root = document.tenants[0].workspaceRoot;
      for (const name of [`${root}-b`, `${root}b`, `${root}.b`]) mkdirSync(name);
      document.tenants[1].workspaceRoot = `${root}-b`;
      document.tenants.push({ ...fixture.document(1).tenants[0], workspaceRoot: `${root}b` }, { ...fixture.document(1).tenants[0], workspaceRoot: `${root}.b` });
    }, 'w0, w0-b, w0b and w0.b overlap nothing');
    accepted((fixture, document) => {
      mkdirSync(`${fixture.stateDir}-ws`);
      document.tenants[0].workspaceRoot = `${fixture.stateDir}-ws`;
    }, 'a root named like the state dir with a suffix');
    accepted((fixture, document) => {
      mkdirSync(join(fixture.dir, 'secretsX'));
      document.tenants[0].workspaceRoot = join(fixture.dir, 'secretsX');
    }, 'a root named like the secrets directory with a suffix');
    refused((_, document) => {
      mkdirSync(join(document.tenants[0].workspaceRoot, 'b'));
      document.tenants[1].workspaceRoot = join(document.tenants[0].workspaceRoot, 'b');
    }, /overlaps tenants\[0\]\.workspaceRoot/, 'a root one level inside another');
    refused((_, document) => void (document.tenants[1].workspaceRoot = document.tenants[0].workspaceRoot), /overlaps tenants\[0\]\.workspaceRoot/, 'the same root twice');
    refused((fixture, document) => {
      mkdirSync(fixture.tenantStateRoot, { recursive: true });
      document.tenants[0].workspaceRoot = fixture.tenantStateRoot;
    }, /lies inside the state dir|the tenant state root/, 'the tenant state root itself');
  });
});
