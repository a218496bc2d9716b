/**
 * The server's own files, which no tool may read, list, search or patch wherever they lie, and no
 * sandbox may show (CONTRACT.md §17): its state dir (the SQLite database and tenants' state
 * included), token file, models file, MCP config, permissions file, tenant registry, tenant
 * state root and webhook secret file. The MCP config and the permissions file are also what the next start obeys, so a
 * model that could patch them would choose its own commands and rules.
 */
import { canonicalPath } from './tenant-workspace-roots.ts';
import { isInside } from '../workspace/paths.ts';

export interface ServerSecretSources {
  stateDir: string;
  tokenFile: string | null;
  modelsFile: string | null;
  mcpConfig: string | null;
  permissionsFile: string | null;
  tenantRegistry: string | null;
  tenantStateRoot: string | null;
  webhookSecretFile: string | null;
}

export interface ServerSecret {
  /** how a refusal names it, e.g. "the token file" */
  name: string;
  path: string;
}

export function serverSecrets(sources: ServerSecretSources): ServerSecret[] {
  const named: [string, string | null][] = [
    ['the state dir', sources.stateDir],
    ['the token file', sources.tokenFile],
    ['the models file', sources.modelsFile],
    ['the MCP config', sources.mcpConfig],
    ['the permissions file', sources.permissionsFile],
    ['the tenant registry', sources.tenantRegistry],
    ['the tenant state root', sources.tenantStateRoot],
    ['the webhook secret file', sources.webhookSecretFile],
  ];
  return named.filter((entry): entry is [string, string] => entry[1] !== null).map(([name, path]) => ({ name, path }));
}

/**
 * The first secret a sandbox showing `workspace` would expose (it lies inside, or the workspace
 * lies inside a secret directory), as a sentence naming the path; null when none.
 */
export function secretExposedBy(workspace: string, secrets: readonly ServerSecret[]): string | null {
  const shown = canonicalPath(workspace);
  for (const secret of secrets) {
    const path = canonicalPath(secret.path);
    if (isInside(path, shown)) return `the workspace root ${workspace} would show ${secret.name} (${path}) to the sandbox; move one out of the other`;
    if (isInside(shown, path)) return `the workspace root ${workspace} lies inside ${secret.name} (${path}), which the sandbox must not show`;
  }
  return null;
}
