import Anthropic from '@anthropic-ai/sdk';
import type { PayloadRule } from '../stream-payloads.ts';
import { tryParseJson } from '../provider-error.ts';

/** Anthropic: `ping` and unnamed messages are skipped, an `error` message is an APIError, empty data is skipped. */
export function anthropicPayloads(response: { readonly headers: Headers }): PayloadRule<unknown> {
  return (message) => {
    if (message.event === undefined || message.event === 'ping') return undefined;
    if (message.event === 'error') {
      const body = tryParseJson(message.data) ?? message.data;
      const type = (body as { error?: { type?: unknown } } | null)?.error?.type;
      throw new Anthropic.APIError(undefined, body as object, undefined, response.headers, (type ?? null) as ConstructorParameters<typeof Anthropic.APIError>[4]);
    }
    if (!message.data) return undefined;
    return JSON.parse(message.data);
  };
}
