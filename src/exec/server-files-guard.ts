/**
 * The host executor's refusal of the server's own files (CONTRACT.md §17): bubblewrap masks them
 * for commands, and this keeps the file tools (read_file, list_dir, search, apply_patch) off them
 * too, wherever they lie, e.g. a token file an operator put inside a workspace root. Paths are
 * canonical (the tools resolve symlinks before they ask), and the secrets are resolved at each
 * call, like the masks: a state dir may appear after start-up.
 */
import { isInside } from '../workspace/paths.ts';
import { hiddenPaths } from '../sandbox/hidden-paths.ts';
import { ExecutorError } from './executor.ts';

export interface ServerFilesGuard {
  /** throws when `path` is, or lies inside, one of the server's files */
  refuse(path: string): void;
  /** whether `path` is, or lies inside, one of them (for what a listing or search leaves out) */
  covers(path: string): boolean;
}

export function serverFilesGuard(secretPaths: readonly (string | null)[]): ServerFilesGuard {
  const covers = (path: string) => hiddenPaths(secretPaths).some((secret) => isInside(path, secret.path));
  return {
    covers,
    refuse(path) {
      if (covers(path)) throw new ExecutorError('operation', `${path} is one of agentd's own files; no tool may read or change it`);
    },
  };
}
