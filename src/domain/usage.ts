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
export interface UsageCounters {
  input: number;
  output: number;
  cached: number;
}

export function toUsageCounters(usage: ModelUsage | null): UsageCounters | null {
  return usage ? { input: usage.inputTokens, output: usage.outputTokens, cached: usage.cachedTokens } : null;
}
