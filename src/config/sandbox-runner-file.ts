/**
 * The file checks of `--sandbox-runner PATH` (CONTRACT.md §12). The runner is the one program
 * trusted to hold the sandbox, so nobody but its owner may change it: not another account
 * (group- or world-writable), and not the model (a file inside a workspace root it can write).
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { sep } from 'node:path';

/** Why `path` may not serve as the sandbox runner, or null when it may. */
export function sandboxRunnerFileProblem(path: string, workspaceRoots: readonly string[]): string | null {
  let canonical: string;
  try {
    canonical = realpathSync(path);
  } catch {
    return `${path} does not exist`;
  }
  const stat = statSync(canonical);
  if (!stat.isFile()) return `${path} is not a regular file`;
  try {
    accessSync(canonical, constants.X_OK);
  } catch {
    return `${path} is not executable`;
  }
  if ((stat.mode & 0o022) !== 0) {
    return `${path} is group- or world-writable (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}); only its owner may change the sandbox`;
  }
  for (const root of workspaceRoots) {
    const canonicalRoot = canonicalOrAsGiven(root);
    if (canonical === canonicalRoot || canonical.startsWith(canonicalRoot.endsWith(sep) ? canonicalRoot : `${canonicalRoot}${sep}`)) {
      return `${path} lies inside the workspace root ${root}, where the model could replace it`;
    }
  }
  return null;
}

function canonicalOrAsGiven(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path; // a root that does not exist yet is refused later by the workspace layer
  }
}
