/**
 * --cluster: a turn's model requests and tool calls start only while its lease is this instance's
 * (TurnLeases.confirm), so that an owner held up past its lease (frozen, starved) does not start
 * work another instance may now be doing. The writes are fenced by the attempt anyway; this keeps
 * the work itself, model request retries included, to one instance at a time.
 */
import type { ProviderAdapter } from '../../agent/providers/types.ts';
import type { TurnTools } from './tool-port.ts';

export type LeaseCheck = () => Promise<void>;

export function fencedAdapter(adapter: ProviderAdapter, confirm: LeaseCheck): ProviderAdapter {
  return {
    dialect: adapter.dialect,
    async *stream(request, signal) {
      await confirm();
      yield* adapter.stream(request, signal);
    },
  };
}

export function fencedTools(tools: TurnTools, confirm: LeaseCheck): TurnTools {
  return {
    specs: () => tools.specs(),
    planMode: () => tools.planMode(),
    execute: async (call) => {
      await confirm();
      return tools.execute(call);
    },
  };
}
