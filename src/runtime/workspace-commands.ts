/**
 * The boundary's WorkspaceCommands (workspace/workspace-commands.ts): repository setup and
 * attachment clean-up run through the boundary's own executor, exactly where its execution tools
 * run: the tenant's sandbox with guest paths, or the host (confined by bubblewrap when the
 * start-up probe worked) with host paths.
 */
import { toolEnvironment } from '../exec/tool-environment.ts';
import type { BoundaryTools } from '../exec/boundary-tools.ts';
import { writeFileBelow } from '../workspace/attachments.ts';
import type { WorkspaceCommands } from '../workspace/workspace-commands.ts';

/** The sandbox's own PATH: the guest's programs, nothing of the server's. */
const SANDBOX_SEARCH_PATH = '/usr/local/bin:/usr/bin:/bin';
/** Bytes per write request: base64 of it stays well under the protocol's 4 MiB line. */
const SANDBOX_WRITE_CHUNK_BYTES = 2 * 1024 * 1024;

export function workspaceCommands(tools: BoundaryTools, workspaceRoots: readonly string[]): WorkspaceCommands {
  const commands: WorkspaceCommands = {
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
    async writeFile(base, hostPath, content) {
      if (!tools.sandboxed) return writeFileBelow(base, hostPath, content);
      const guestPath = commands.pathOf(hostPath);
      if (content.length <= SANDBOX_WRITE_CHUNK_BYTES) return tools.executor.writeFile(guestPath, content, { createParents: true });
      // A larger file goes in parts, joined inside the sandbox.
      const parts: string[] = [];
      for (let offset = 0; offset < content.length; offset += SANDBOX_WRITE_CHUNK_BYTES) {
        const part = `${guestPath}.part-${parts.length}`;
        await tools.executor.writeFile(part, content.subarray(offset, offset + SANDBOX_WRITE_CHUNK_BYTES), { createParents: true });
        parts.push(part);
      }
      const joined = await commands.run(['sh', '-c', 'target=$1; shift; cat -- "$@" > "$target" && rm -f -- "$@"', 'sh', guestPath, ...parts], {
        cwd: commands.workspace,
        signal: new AbortController().signal,
        timeoutMs: 60_000,
      });
      if (joined.failure !== null || joined.exitCode !== 0) throw new Error(`could not write ${guestPath}: ${joined.failure ?? joined.output.trim().slice(-500)}`);
    },
  };
  return commands;
}
