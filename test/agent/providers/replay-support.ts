import assert from 'node:assert/strict';
import type { CanonicalItem, ModelRequest, ProviderAdapter, ProviderEvent } from '../../../src/agent/providers/types.ts';

/** A minimal model request; tests override what they look at. */
export function modelRequest(overrides: Partial<ModelRequest> = {}, transportModel = 'test-model'): ModelRequest {
  return {
    transportModel,
    instructions: 'Be brief.',
    input: [{ type: 'message', role: 'user', content: 'hello' }],
    tools: [],
    effort: null,
    ...overrides,
  };
}

/** A fetch that answers every call with `body` as SSE, 7 bytes at a time (chunk boundaries anywhere). */
export function replayingFetch(body: Buffer, contentType = 'text/event-stream; charset=utf-8'): typeof fetch {
  return async () => {
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= body.length) return controller.close();
        controller.enqueue(new Uint8Array(body.subarray(offset, offset + 7)));
        offset += 7;
      },
    });
    return new Response(stream, { status: 200, headers: { 'content-type': contentType } });
  };
}

export interface Replay {
  events: ProviderEvent[];
  text: string;
  reasoning: string;
  items: CanonicalItem[];
  done: Extract<ProviderEvent, { type: 'response.done' }>;
}

/** Streams one request through an adapter and sums up what came out. */
export async function collectReplay(adapter: ProviderAdapter, request: ModelRequest): Promise<Replay> {
  const events: ProviderEvent[] = [];
  for await (const event of adapter.stream(request, new AbortController().signal)) events.push(event);
  const last = events[events.length - 1];
  assert.equal(last.type, 'response.done', 'the stream ends with response.done');
  return {
    events,
    text: events.map((event) => (event.type === 'text.delta' ? event.text : '')).join(''),
    reasoning: events.map((event) => (event.type === 'reasoning.delta' ? event.text : '')).join(''),
    items: events.flatMap((event) => (event.type === 'item.done' ? [event.item] : [])),
    done: last as Replay['done'],
  };
}
