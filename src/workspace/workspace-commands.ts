/**
 * Where work on a tree the tenant can write happens (CONTRACT.md §17): a command run where the
 * tenant's own commands run. With a sandbox runner that is the tenant's sandbox (its view of its
 * one workspace, its network filter, nothing of the host's environment), so a symlink, a swapped
 * directory or a git configuration the tenant plants can only lead to what the tenant already
 * sees. Without one it is the host, under a boundary whose guest has no command of its own running
 * beside it. runtime/workspace-commands.ts makes one from the boundary's executor.
 */

interface WorkspaceCommandResult {
  /** null when the command did not end by itself */
  exitCode: number | null;
  /** stdout and stderr interleaved, head and tail when long */
  output: string;
  /** why the command did not run or did not finish (a sandbox failure, a timeout, a cancel); null otherwise */
  failure: string | null;
}

interface WorkspaceCommandOptions {
  /** a path as the commands see it (see pathOf) */
  cwd: string;
  signal: AbortSignal;
  timeoutMs: number;
}

export interface WorkspaceCommands {
  /** true: the commands run in the tenant's sandbox, and their paths are guest paths */
  readonly sandboxed: boolean;
  /** the first workspace root as the commands see it */
  readonly workspace: string;
  /** the program search path the commands are given (the sandbox's own, or the server's) */
  searchPath(): string;
  /** a host path inside the first workspace root as the commands see it */
  pathOf(hostPath: string): string;
  /** runs argv (no shell) with exactly the environment its argv sets up */
  run(argv: readonly string[], options: WorkspaceCommandOptions): Promise<WorkspaceCommandResult>;
  /**
   * Writes a file whole, creating the directories from `base` (an existing directory) down to it.
   * On the host no component below `base` may be a symlink (no-follow.ts); in the sandbox the
   * guest's own view decides, and the files belong to the guest.
   */
  writeFile(base: string, hostPath: string, content: Buffer): Promise<void>;
}

/** `rm -rf` where the tenant's commands run: GNU rm walks with openat and never follows a symlink it meets. */
export async function removeTrees(commands: WorkspaceCommands, hostPaths: readonly string[], signal: AbortSignal = new AbortController().signal): Promise<void> {
  const result = await commands.run(['rm', '-rf', '--one-file-system', '--', ...hostPaths.map((hostPath) => commands.pathOf(hostPath))], {
    cwd: commands.workspace,
    signal,
    timeoutMs: 10 * 60_000,
  });
  if (result.failure !== null || result.exitCode !== 0) {
    throw new Error(`could not remove ${hostPaths.map((hostPath) => commands.pathOf(hostPath)).join(', ')}: ${result.failure ?? result.output.trim().slice(-500)}`);
  }
}
