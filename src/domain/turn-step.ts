import type { CanonicalItem } from './canonical-item.ts';
import type { ModelUsage } from './usage.ts';

/**
 * A durable step of a turn's agent loop (CONTRACT.md §18: a cluster's turn resumes from its last
 * one): a model response, with `modelStep`, or a batch of tool results. agent/loop.ts makes them,
 * store/turn-steps.ts keeps them.
 */
export interface RecordedStep {
  items: CanonicalItem[];
  modelStep: RecordedModelStep | null;
  /** a step of tool results: the turn's change receipt as it then stood, as the runtime encodes it */
  receipt?: string;
}

/** What a model response came to besides its items: enough to end the turn on it without asking again. */
export interface RecordedModelStep {
  usage: ModelUsage | null;
  completion: { status: 'completed' | 'incomplete'; reason?: string };
  responseId: string | null;
  model: string | null;
  stopReason: string | null;
  apiDurationMs: number;
}
