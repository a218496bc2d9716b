import type { DialectDescriptor } from '../dialect-descriptor.ts';
import { OPENAI_RATE_LIMITS } from './rate-limits.ts';

export const openAIResponses: DialectDescriptor = {
  dialect: 'openai-responses',
  freeformTools: true,
  inputTokensIncludeCached: true,
  rateLimits: OPENAI_RATE_LIMITS,
  loadAdapter: async () => (await import('./adapter.ts')).createOpenAIResponsesAdapter,
};
