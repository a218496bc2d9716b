/**
 * The WorkspaceCommands a boundary without a sandbox runner has: the real host executor over the
 * process-group runner, built the way runtime/open-boundary.ts builds a boundary's tools.
 */
import { runInProcessGroup } from '../../src/exec/process-group.ts';
import { workspaceCommands } from '../../src/runtime/workspace-commands.ts';
import { boundaryTools } from '../../src/exec/boundary-tools.ts';
import type { WorkspaceCommands } from '../../src/workspace/workspace-commands.ts';

export function hostWorkspaceCommands(workspaceRoots: readonly string[]): WorkspaceCommands {
  const tools = boundaryTools({ sandboxRunner: null, workspaceRoots, hostRunner: (request) => runInProcessGroup(request) });
  return workspaceCommands(tools, workspaceRoots);
}
