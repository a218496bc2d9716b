/** Shared by the OpenAI Responses adapter tests: drain a stream into something easy to assert on. */
import type { CanonicalItem, ModelRequest, ProviderEvent } from '../../../../src/agent/providers/types.ts';

export interface CollectedStream {
  events: ProviderEvent[];
  text: string;
  reasoning: string;
  items: CanonicalItem[];
  toolStarts: Array<{ callId: string; name: string; kind: string }>;
  /** arguments rebuilt from tool.arguments.delta events, by call id */
  argumentsByCall: Record<string, string>;
  done: Extract<ProviderEvent, { type: 'response.done' }> | undefined;
}

export async function collect(stream: AsyncIterable<ProviderEvent>): Promise<CollectedStream> {
  const collected: CollectedStream = { events: [], text: '', reasoning: '', items: [], toolStarts: [], argumentsByCall: {}, done: undefined };
  for await (const event of stream) {
    collected.events.push(event);
    if (event.type === 'text.delta') collected.text += event.text;
    if (event.type === 'reasoning.delta') collected.reasoning += event.text;
    if (event.type === 'item.done') collected.items.push(event.item);
    if (event.type === 'tool.started') collected.toolStarts.push({ callId: event.callId, name: event.name, kind: event.kind });
    if (event.type === 'tool.arguments.delta') {
      collected.argumentsByCall[event.callId] = (collected.argumentsByCall[event.callId] ?? '') + event.delta;
    }
    if (event.type === 'response.done') collected.done = event;
  }
  return collected;
}

export function modelRequest(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    transportModel: 'gpt-test',
    instructions: 'You are a test.',
    input: [{ type: 'message', role: 'user', content: 'Hello' }],
    tools: [],
    effort: 'medium',
    ...overrides,
  };
}

/** Runs `body` and returns what it threw (failing the test if it did not throw). */
export async function caught(body: () => Promise<unknown>): Promise<unknown> {
  try {
    await body();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, but none was thrown');
}
