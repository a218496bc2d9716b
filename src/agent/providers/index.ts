/**
 * Chooses the adapter for a connection's wire dialect. Every adapter speaks the same
 * ProviderAdapter interface; `fetch` is injectable for tests and custom transports.
 *
 * Canonical history may mix dialects after a fork. Items only one dialect can read carry a
 * `provider` origin marker: 'anthropic' (thinking, redacted thinking, server tool blocks) or
 * 'openai-chat' (plain-text reasoning). The Anthropic and Chat adapters drop what they cannot
 * read themselves; the Responses adapter is given its input with such items filtered out here.
 */
import { isAnthropicOnlyItem } from './anthropic-messages/convert.ts';
import { createAnthropicMessagesAdapter } from './anthropic-messages/adapter.ts';
import { createOpenAIChatAdapter } from './openai-chat/adapter.ts';
import { createOpenAIResponsesAdapter } from './openai-responses/adapter.ts';
import type { CanonicalItem, ConnectionSettings, Dialect, ProviderAdapter } from './types.ts';

export { ANTHROPIC_ORIGIN, isAnthropicOnlyItem } from './anthropic-messages/convert.ts';
export { CHAT_ORIGIN } from './openai-chat/adapter.ts';

export interface ProviderAdapterOptions {
  fetch?: typeof fetch;
}

export function createProviderAdapter(dialect: Dialect, connection: ConnectionSettings, options: ProviderAdapterOptions = {}): ProviderAdapter {
  switch (dialect) {
    case 'openai-responses': {
      const adapter = createOpenAIResponsesAdapter(connection, options);
      return {
        dialect: adapter.dialect,
        stream: (request, signal) => adapter.stream({ ...request, input: request.input.filter(isResponsesReadable) }, signal),
      };
    }
    case 'anthropic-messages':
      return createAnthropicMessagesAdapter(connection, options);
    case 'openai-chat':
      return createOpenAIChatAdapter(connection, options);
  }
}

/** Responses reasoning items never carry `provider`; a marked one came from another dialect. */
export function isResponsesReadable(item: CanonicalItem): boolean {
  if (isAnthropicOnlyItem(item)) return false;
  return !(item.type === 'reasoning' && typeof item.provider === 'string');
}
