import OpenAI from 'openai';
import type { PayloadRule } from '../stream-payloads.ts';

/** The OpenAI SDK's stream rule (openai-responses and openai-chat): `[DONE]` ends the stream, a payload carrying `error` is an APIError. */
export function openAIPayloads(response: { readonly headers: Headers }): PayloadRule<unknown> {
  let done = false;
  return (message) => {
    if (done) return undefined;
    if (message.data.startsWith('[DONE]')) {
      done = true;
      return undefined;
    }
    // Assistants' events (never sent by the endpoints we call) come wrapped, as the SDK wraps them.
    if (message.event?.startsWith('thread.')) return { event: message.event, data: JSON.parse(message.data) };
    const payload = JSON.parse(message.data) as { error?: unknown } | null;
    if (payload && payload.error) throw new OpenAI.APIError(undefined, payload.error as object, undefined, response.headers);
    return payload;
  };
}
