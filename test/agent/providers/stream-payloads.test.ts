/**
 * Reading a streamed answer's body ourselves must change nothing a caller sees: the official SDKs'
 * own stream readers are the oracle, over random streams cut into random chunks (inside lines,
 * between a CR and its LF, inside a multi-byte character).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { Stream as AnthropicStream } from '@anthropic-ai/sdk/core/streaming';
import fc from 'fast-check';
import OpenAI from 'openai';
import { Stream as OpenAIStream } from 'openai/core/streaming';
import { eventStreamPayloads, type PayloadRule } from '../../../src/agent/providers/stream-payloads.ts';
import { anthropicPayloads } from '../../../src/agent/providers/anthropic-messages/payloads.ts';
import { openAIPayloads } from '../../../src/agent/providers/openai-responses/payloads.ts';

const encoder = new TextEncoder();

function bodyOf(chunks: Uint8Array[], onCancel: () => void = () => {}): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]);
      else controller.close();
    },
    cancel: onCancel,
  });
}

function cutAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    if (point > start) chunks.push(bytes.slice(start, point));
    start = Math.max(start, point);
  }
  return chunks;
}

async function ours(chunks: Uint8Array[], rule: PayloadRule<unknown>): Promise<{ payloads: unknown[]; error: unknown; batches: number }> {
  const payloads: unknown[] = [];
  let batches = 0;
  try {
    for await (const batch of eventStreamPayloads(bodyOf(chunks), rule)) {
      batches += 1;
      payloads.push(...batch);
    }
    return { payloads, error: null, batches };
  } catch (error) {
    return { payloads, error, batches };
  }
}

async function theSdks(stream: AsyncIterable<unknown>): Promise<{ payloads: unknown[]; error: unknown }> {
  const payloads: unknown[] = [];
  try {
    for await (const payload of stream) payloads.push(payload);
    return { payloads, error: null };
  } catch (error) {
    return { payloads, error };
  }
}

const lineEnd = fc.constantFrom('\n', '\r\n', '\r');
const text = fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', ' ', ':', '"', 'z') });
const payload = fc.record({ type: fc.constantFrom('delta', 'done', 'message_start'), text, n: fc.integer() });

/** One message as a provider could send it: optional event, one or more data lines, comments, unknown fields. */
const message = fc.record({
  event: fc.option(fc.constantFrom('response.output_text.delta', 'message_delta', 'ping', 'content_block_delta', 'thread.run'), { nil: null }),
  payload,
  splitData: fc.boolean(),
  comment: fc.boolean(),
  unknownField: fc.boolean(),
  spaceAfterColon: fc.boolean(),
  end: lineEnd,
});

function wire(messages: Array<typeof message extends fc.Arbitrary<infer T> ? T : never>, done: boolean): string {
  let out = '';
  for (const m of messages) {
    const sp = m.spaceAfterColon ? ' ' : '';
    if (m.comment) out += `: keep-alive${m.end}`;
    if (m.event !== null) out += `event:${sp}${m.event}${m.end}`;
    if (m.unknownField) out += `id:${sp}7${m.end}`;
    const json = JSON.stringify(m.payload);
    if (m.splitData) {
      // a JSON value split over two data lines joins back with LF, which JSON reads as whitespace
      const at = json.indexOf(',');
      out += `data:${sp}${json.slice(0, at + 1)}${m.end}data:${sp}${json.slice(at + 1)}${m.end}`;
    } else out += `data:${sp}${json}${m.end}`;
    out += m.end;
  }
  if (done) out += 'data: [DONE]\n\n';
  return out;
}

describe('a streamed answer read as the SDKs read it', () => {
  test('openai: the same payloads as Stream.fromSSEResponse, however the bytes are cut', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { maxLength: 8 }), fc.boolean(), fc.array(fc.nat(), { maxLength: 12 }), async (messages, done, cuts) => {
        const bytes = encoder.encode(wire(messages, done));
        const chunks = cutAt(bytes, cuts);
        const sdk = await theSdks(OpenAIStream.fromSSEResponse(new Response(bodyOf(chunks)), new AbortController()));
        const mine = await ours(chunks, openAIPayloads({ headers: new Headers() }));
        assert.deepEqual(mine.payloads, sdk.payloads);
        assert.equal(mine.error, null);
        assert.equal(sdk.error, null);
        assert.ok(mine.batches <= chunks.length + 1, 'one batch per network chunk at most');
      }),
      { numRuns: 300 },
    );
  });

  test('anthropic: the same payloads as Stream.fromSSEResponse, however the bytes are cut', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), async (messages, cuts) => {
        const chunks = cutAt(encoder.encode(wire(messages, false)), cuts);
        const sdk = await theSdks(AnthropicStream.fromSSEResponse(new Response(bodyOf(chunks)), new AbortController()));
        const mine = await ours(chunks, anthropicPayloads({ headers: new Headers() }));
        assert.deepEqual(mine.payloads, sdk.payloads);
        assert.equal(mine.error, null);
      }),
      { numRuns: 300 },
    );
  });

  test('openai: a payload carrying an error is the SDK’s APIError, after what came before it', async () => {
    const stream = 'data: {"type":"a"}\n\ndata: {"error":{"message":"overloaded","type":"server_error","code":"busy"}}\n\ndata: {"type":"b"}\n\n';
    const headers = new Headers({ 'x-request-id': 'req_1' });
    const sdk = await theSdks(OpenAIStream.fromSSEResponse(new Response(bodyOf([encoder.encode(stream)]), { headers }), new AbortController()));
    const mine = await ours([encoder.encode(stream)], openAIPayloads({ headers }));
    assert.deepEqual(mine.payloads, [{ type: 'a' }]);
    assert.deepEqual(mine.payloads, sdk.payloads);
    assert.ok(mine.error instanceof OpenAI.APIError);
    assert.ok(sdk.error instanceof OpenAI.APIError);
    assert.equal(mine.error.message, sdk.error.message);
    assert.equal(mine.error.code, 'busy');
    assert.equal(mine.error.requestID, 'req_1');
  });

  test('anthropic: an error message is the SDK’s APIError with its type, after what came before it', async () => {
    const stream =
      'event: message_start\ndata: {"type":"message_start"}\n\nevent: ping\ndata: {"type":"ping"}\n\n' +
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    const sdk = await theSdks(AnthropicStream.fromSSEResponse(new Response(bodyOf([encoder.encode(stream)])), new AbortController()));
    const mine = await ours([encoder.encode(stream)], anthropicPayloads({ headers: new Headers() }));
    assert.deepEqual(mine.payloads, [{ type: 'message_start' }]);
    assert.deepEqual(mine.payloads, sdk.payloads);
    assert.ok(mine.error instanceof Anthropic.APIError);
    assert.ok(sdk.error instanceof Anthropic.APIError);
    assert.equal(mine.error.message, sdk.error.message);
    assert.equal(mine.error.type, 'overloaded_error');
  });

  test('a message the stream stops in the middle of is dropped, as the SDKs drop it', async () => {
    const chunks = [encoder.encode('data: {"n":1}\n\ndata: {"n":2}\n')];
    const mine = await ours(chunks, openAIPayloads({ headers: new Headers() }));
    const sdk = await theSdks(OpenAIStream.fromSSEResponse(new Response(bodyOf(chunks)), new AbortController()));
    assert.deepEqual(mine.payloads, [{ n: 1 }]);
    assert.deepEqual(sdk.payloads, [{ n: 1 }]);
  });

  test('messages that arrive together come out as one batch', async () => {
    const mine = await ours([encoder.encode('data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\n')], openAIPayloads({ headers: new Headers() }));
    assert.equal(mine.batches, 1);
    assert.deepEqual(mine.payloads, [{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  test('leaving early cancels the body; reading to the end does not', async () => {
    let cancelled = 0;
    const chunks = [encoder.encode('data: {"n":1}\n\n'), encoder.encode('data: {"n":2}\n\n')];
    for await (const batch of eventStreamPayloads(bodyOf(chunks, () => (cancelled += 1)), openAIPayloads({ headers: new Headers() }))) {
      assert.deepEqual(batch, [{ n: 1 }]);
      break;
    }
    assert.equal(cancelled, 1);
    for await (const batch of eventStreamPayloads(bodyOf(chunks, () => (cancelled += 1)), openAIPayloads({ headers: new Headers() }))) assert.equal(batch.length, 1);
    assert.equal(cancelled, 1);
  });

  test('a body that fails mid-stream fails the read, after what arrived before it', async () => {
    let pulls = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(encoder.encode('data: {"n":1}\n\n'));
        else controller.error(new Error('socket hang up'));
      },
    });
    const seen: unknown[] = [];
    await assert.rejects(async () => {
      for await (const batch of eventStreamPayloads(failing, openAIPayloads({ headers: new Headers() }))) seen.push(...batch);
    }, /socket hang up/);
    assert.deepEqual(seen, [{ n: 1 }]);
  });
});
