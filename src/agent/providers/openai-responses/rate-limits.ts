import type { RateLimitHeaders } from '../dialect-descriptor.ts';

/** OpenAI's `x-ratelimit-reset-{requests,tokens}` (relative durations) and their remaining counts; openai-chat's providers send the same. */
export const OPENAI_RATE_LIMITS: RateLimitHeaders = {
  limits: ['requests', 'tokens'],
  resetHeader: (limit) => `x-ratelimit-reset-${limit}`,
  remainingHeader: (limit) => `x-ratelimit-remaining-${limit}`,
  resetFormat: 'go-duration',
};
