import type { RateLimitHeaders } from '../dialect-descriptor.ts';

/** Anthropic's `anthropic-ratelimit-{…}-reset` (absolute RFC 3339 times) and their remaining counts. */
export const ANTHROPIC_RATE_LIMITS: RateLimitHeaders = {
  limits: ['requests', 'tokens', 'input-tokens', 'output-tokens'],
  resetHeader: (limit) => `anthropic-ratelimit-${limit}-reset`,
  remainingHeader: (limit) => `anthropic-ratelimit-${limit}-remaining`,
  resetFormat: 'timestamp',
};
