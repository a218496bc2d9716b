import { Type, type Static } from 'typebox';

/** What a provider reported one or more model steps consumed, normalised across dialects. */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** Anthropic reports cache writes separately; null when the provider did not say. */
  cacheCreationTokens: number | null;
  reasoningTokens: number | null;
  webSearchRequests: number | null;
}

/** The token counters a history entry and a session keep. */
export const UsageCounters = Type.Object({ input: Type.Integer(), output: Type.Integer(), cached: Type.Integer() });
export type UsageCounters = Static<typeof UsageCounters>;

export function toUsageCounters(usage: ModelUsage | null): UsageCounters | null {
  return usage ? { input: usage.inputTokens, output: usage.outputTokens, cached: usage.cachedTokens } : null;
}
