import type { DialectDescriptor } from '../dialect-descriptor.ts';
import { ANTHROPIC_RATE_LIMITS } from './rate-limits.ts';

export const anthropicMessages: DialectDescriptor = {
  dialect: 'anthropic-messages',
  freeformTools: false,
  // cache reads and writes have their own fields beside input_tokens
  inputTokensIncludeCached: false,
  rateLimits: ANTHROPIC_RATE_LIMITS,
  loadAdapter: async () => (await import('./adapter.ts')).createAnthropicMessagesAdapter,
};
