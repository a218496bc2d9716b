import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A scratch layout for registry tests: state dir, tenant state root, workspaces and token files. */
export interface RegistryFixture {
  dir: string;
  stateDir: string;
  tenantStateRoot: string;
  registryPath: string;
  context: { stateDir: string; tenantStateRoot: string; serverUid: number };
  /** a fresh, existing, canonical workspace directory */
  workspace(): string;
  /** a fresh 0600 token file; returns its path and the token */
  tokenFile(token?: string): { path: string; token: string };
  /** a document with `tenantCount` tenants of `credentialCount` credentials, all files real */
  document(tenantCount?: number, credentialCount?: number): any;
  /** writes the registry file (mode 0600) */
  write(document: unknown): string;
}

export function registryFixture(): RegistryFixture {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-registry-')));
  const stateDir = join(dir, 'state');
  const tenantStateRoot = join(stateDir, 'tenants');
  mkdirSync(join(dir, 'workspaces'));
  mkdirSync(join(dir, 'secrets'), { mode: 0o700 });
  const registryPath = join(dir, 'tenants.json');
  let counter = 0;
  const fixture: RegistryFixture = {
    dir,
    stateDir,
    tenantStateRoot,
    registryPath,
    context: { stateDir, tenantStateRoot, serverUid: process.getuid!() },
    workspace() {
      const path = join(dir, 'workspaces', `w${counter++}`);
      mkdirSync(path);
      return path;
    },
    tokenFile(token = randomBytes(36).toString('base64url')) {
      const path = join(dir, 'secrets', `t${counter++}`);
      writeFileSync(path, `${token}\n`, { mode: 0o600 });
      return { path, token };
    },
    document(tenantCount = 2, credentialCount = 1) {
      return {
        version: 1,
        tenants: Array.from({ length: tenantCount }, () => ({
          id: randomUUID(),
          workspaceRoot: fixture.workspace(),
          credentials: Array.from({ length: credentialCount }, () => ({ id: randomUUID(), tokenFile: fixture.tokenFile().path })),
        })),
      };
    },
    write(document) {
      writeFileSync(registryPath, typeof document === 'string' ? document : JSON.stringify(document), { mode: 0o600 });
      return registryPath;
    },
  };
  return fixture;
}
