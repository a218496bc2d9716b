import type { DialectDescriptor } from '../dialect-descriptor.ts';
import { OPENAI_RATE_LIMITS } from '../openai-responses/rate-limits.ts';

export const openAIChat: DialectDescriptor = {
  dialect: 'openai-chat',
  freeformTools: false,
  inputTokensIncludeCached: true,
  rateLimits: OPENAI_RATE_LIMITS,
  loadAdapter: async () => (await import('./adapter.ts')).createOpenAIChatAdapter,
};
