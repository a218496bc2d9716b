/**
 * The executor a tool runs on: the one its context carries (the boundary's, always so in the
 * server), else a plain host executor, for a tool used on its own (tests, embedding).
 */
import { hostExecutor } from '../../exec/host-executor.ts';
import type { ToolExecutor } from '../../exec/executor.ts';
import { createProcessGroupRunner } from '../../exec/process-group.ts';
import type { ToolContext } from './types.ts';

let standalone: ToolExecutor | null = null;

export function executorOf(ctx: Pick<ToolContext, 'executor'>, own?: ToolExecutor): ToolExecutor {
  return ctx.executor ?? own ?? (standalone ??= hostExecutor({ runner: createProcessGroupRunner() }));
}
