/**
 * Opens the runtime of one boundary, the same way for the single-user server's one boundary
 * (server.ts) and for each tenant (tenancy/tenant-hosting.ts): its execution tools on the machine
 * (the sandbox runner, or the host), then its services.
 */
import type { Dialect } from '../agent/providers/types.ts';
import type { ToolRegistry } from '../agent/tools/registry.ts';
import { boundaryTools, type BoundaryToolsOptions } from '../exec/boundary-tools.ts';
import type { Boundary } from './boundary.ts';
import { BoundaryRuntime, type BoundaryRuntimeDeps } from './boundary-runtime.ts';
import type { TurnToolsFactory } from './turn/tool-port.ts';
import { createTurnTools, type TurnToolOptions } from './turn/turn-tools.ts';

export interface BoundaryOpening extends Omit<Boundary, 'tools'> {
  /** how the boundary's execution tools reach the machine (exec/boundary-tools.ts) */
  tools: BoundaryToolsOptions;
}

/** The boundary's runtime; when it cannot open, its tools and cluster duties are closed again (the caller owns the store). */
export async function openBoundaryRuntime(opening: BoundaryOpening, deps: BoundaryRuntimeDeps): Promise<BoundaryRuntime> {
  const tools = boundaryTools(opening.tools);
  try {
    return await BoundaryRuntime.open({ ...opening, tools }, deps);
  } catch (error) {
    await tools.close();
    await opening.duties?.close();
    throw error;
  }
}

/** The tools of each agent of a turn: the registry of the session's dialect, behind the turn's policy and events. */
export function turnToolsFactory(registryFor: (dialect: Dialect) => Promise<ToolRegistry>, options: TurnToolOptions): TurnToolsFactory {
  return async (scope) => createTurnTools(scope, await registryFor(scope.session.dialect as Dialect), options);
}
