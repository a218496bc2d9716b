/**
 * The boundary's WorkspaceCommands (workspace/workspace-commands.ts): repository setup and
 * attachment clean-up run through the boundary's own executor, exactly where its execution tools
 * run: the tenant's sandbox with guest paths, or the host (confined by bubblewrap when the
 * start-up probe worked) with host paths.
 */
import { toolEnvironment } from '../exec/tool-environment.ts';
import type { BoundaryTools } from '../exec/boundary-tools.ts';
import type { WorkspaceCommands } from '../workspace/workspace-commands.ts';

/** The sandbox's own PATH: the guest's programs, nothing of the server's. */
const SANDBOX_SEARCH_PATH = '/usr/local/bin:/usr/bin:/bin';

export function workspaceCommands(tools: BoundaryTools, workspaceRoots: readonly string[]): WorkspaceCommands {
  return {
    sandboxed: tools.sandboxed,
    workspace: tools.viewOf(workspaceRoots[0]).cwd,
    // Read at each call: the server's PATH as it is now (tests put a git of their own ahead of the real one).
    searchPath: () => (tools.sandboxed ? SANDBOX_SEARCH_PATH : toolEnvironment().PATH),
    pathOf: (hostPath) => tools.viewOf(hostPath).cwd,
    async run(argv, options) {
      try {
        const outcome = await tools.executor.run({
          argv: [...argv],
          cwd: options.cwd,
          timeoutMs: options.timeoutMs,
          signal: options.signal,
          onOutput: () => {},
          view: { writable: true, roots: workspaceRoots },
        });
        const failure = outcome.startError ?? (outcome.cancelled ? 'it was cancelled' : outcome.timedOut ? 'it timed out' : null);
        return { exitCode: outcome.exitCode, output: outcome.output, failure };
      } catch (error) {
        return { exitCode: null, output: '', failure: error instanceof Error ? error.message : String(error) };
      }
    },
  };
}
