/**
 * The fake provider must speak each dialect well enough for the official SDKs' own streaming
 * parsers and accumulators, which are stricter than our adapters need to be.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { DEFAULT_REPLY_TEXT, type FakeProvider, fakeThinkingSignature, startFakeProvider } from './fake-provider.ts';
import { fixtureAsSse, listFixtures } from './fixtures.ts';

let fake: FakeProvider;
let openai: OpenAI;
let anthropic: Anthropic;

before(async () => {
  fake = await startFakeProvider();
  openai = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: `http://127.0.0.1:${fake.port}`, apiKey: 'sk-ant-test', maxRetries: 0 });
});
after(() => fake.close());

const toolReply = {
  kind: 'reply' as const,
  id: 'x1',
  reasoning: 'Let me think.',
  text: 'Listing files.',
  toolCalls: [{ name: 'shell', arguments: '{"cmd":"ls -la","cwd":"."}', callId: 'call_a' }, { name: 'read', arguments: '{"path":"a.txt"}' }],
  usage: { input: 120, output: 30, cached: 100, reasoning: 7 },
};

const anthropicStream = () => anthropic.messages.stream({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
const chatChunks = async () => {
  const chunks = [];
  const stream = await openai.chat.completions.create({ model: 'gpt-chat', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
};
const responsesStream = () => openai.responses.stream({ model: 'gpt-resp', input: 'hi', include: ['reasoning.encrypted_content'] });

async function rejection(body: () => Promise<unknown>): Promise<any> {
  return body().then(() => assert.fail('expected a failure'), (error: unknown) => error);
}

describe('reply steps', () => {
  test('Responses: the SDK ResponseStream accumulates the same output items', async () => {
    fake.enqueue(toolReply);
    const response = await responsesStream().finalResponse();
    assert.equal(response.id, 'resp_x1');
    assert.equal(response.model, 'gpt-resp');
    assert.deepEqual(response.output.map((item) => item.type), ['reasoning', 'message', 'function_call', 'function_call']);
    assert.equal(response.output_text, 'Listing files.');
    const calls = response.output.filter((item) => item.type === 'function_call');
    assert.deepEqual(calls.map((call) => [call.call_id, call.name, JSON.parse(call.arguments)]), [
      ['call_a', 'shell', { cmd: 'ls -la', cwd: '.' }],
      ['call_x1_3', 'read', { path: 'a.txt' }],
    ]);
    const reasoning = response.output[0];
    assert.ok(reasoning.type === 'reasoning' && typeof reasoning.encrypted_content === 'string');
    assert.deepEqual(response.usage?.input_tokens_details, { cached_tokens: 100 });
    assert.equal(response.usage?.output_tokens_details.reasoning_tokens, 7);
  });

  test('Responses: custom tool calls and max_tokens (response.incomplete)', async () => {
    fake.enqueue({ kind: 'reply', text: 'Out of', toolCalls: [{ name: 'patch', arguments: 'raw *** text', kind: 'custom' }], stop: 'max_tokens' });
    const response = await responsesStream().finalResponse();
    assert.equal(response.status, 'incomplete');
    assert.deepEqual(response.incomplete_details, { reason: 'max_output_tokens' });
    const call = response.output[1];
    assert.ok(call.type === 'custom_tool_call');
    assert.equal(call.input, 'raw *** text');
  });

  test('Anthropic: the SDK MessageStream builds thinking (signed), text and tool_use blocks', async () => {
    fake.enqueue(toolReply);
    const message = await anthropicStream().finalMessage();
    assert.equal(message.id, 'msg_x1');
    assert.equal(message.model, 'claude-test');
    assert.deepEqual(message.content.map((block) => block.type), ['thinking', 'text', 'tool_use', 'tool_use']);
    const [thinking, text, shell, read] = message.content;
    assert.ok(thinking.type === 'thinking' && text.type === 'text' && shell.type === 'tool_use' && read.type === 'tool_use');
    assert.equal(thinking.thinking, 'Let me think.');
    assert.equal(thinking.signature, fakeThinkingSignature('x1_0'));
    assert.equal(text.text, 'Listing files.');
    assert.deepEqual([shell.id, shell.name, shell.input], ['call_a', 'shell', { cmd: 'ls -la', cwd: '.' }]);
    assert.deepEqual([read.name, read.input], ['read', { path: 'a.txt' }]);
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(
      [message.usage.input_tokens, message.usage.output_tokens, message.usage.cache_read_input_tokens],
      [120, 30, 100],
    );
  });

  test('Anthropic: max_tokens and a plain default reply', async () => {
    fake.enqueue({ kind: 'reply', text: 'Trunc', stop: 'max_tokens' });
    const truncated = await anthropicStream().finalMessage();
    assert.equal(truncated.stop_reason, 'max_tokens');
    const plain = await anthropicStream().finalMessage();
    assert.deepEqual(plain.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    assert.equal(plain.stop_reason, 'end_turn');
  });

  test('Chat Completions: reasoning_content, content, tool calls by index, usage chunk and [DONE]', async () => {
    fake.enqueue(toolReply);
    const chunks = await chatChunks();
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta as Record<string, any>));
    assert.equal(deltas.map((delta) => delta.reasoning_content ?? '').join(''), 'Let me think.');
    assert.equal(deltas.map((delta) => delta.content ?? '').join(''), 'Listing files.');
    const argumentsByIndex: string[] = [];
    const starts: Array<[number, string, string]> = [];
    for (const call of deltas.flatMap((delta) => delta.tool_calls ?? [])) {
      if (call.id) starts.push([call.index, call.id, call.function.name]);
      argumentsByIndex[call.index] = (argumentsByIndex[call.index] ?? '') + (call.function?.arguments ?? '');
    }
    assert.deepEqual(starts, [[0, 'call_a', 'shell'], [1, 'call_x1_1', 'read']]);
    assert.deepEqual(argumentsByIndex.map((text) => JSON.parse(text)), [{ cmd: 'ls -la', cwd: '.' }, { path: 'a.txt' }]);
    assert.equal(chunks.find((chunk) => chunk.choices[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
    const usageChunk = chunks.at(-1);
    assert.deepEqual(usageChunk?.choices, []);
    assert.deepEqual([usageChunk?.usage?.prompt_tokens, usageChunk?.usage?.completion_tokens, usageChunk?.usage?.prompt_tokens_details?.cached_tokens], [120, 30, 100]);
  });

  test('Chat Completions: the SDK accumulator and a max_tokens stop', async () => {
    fake.enqueue({ kind: 'reply', text: 'Hello there', stop: 'max_tokens' });
    const completion = await openai.chat.completions.stream({ model: 'gpt-chat', messages: [{ role: 'user', content: 'hi' }] }).finalChatCompletion();
    assert.equal(completion.choices[0].message.content, 'Hello there');
    assert.equal(completion.choices[0].finish_reason, 'length');
    assert.equal(fake.requests.at(-1)?.body.stream_options, undefined);
    assert.equal(completion.usage, undefined, 'usage is sent only when the request asks for it');
  });
});

describe('failure steps', () => {
  test('http-error: each SDK sees the status, the error type and the headers', async () => {
    fake.enqueue(
      { kind: 'http-error', status: 429, headers: { 'retry-after': '3' } },
      { kind: 'http-error', status: 529 },
      { kind: 'http-error', status: 400, body: { error: { message: 'bad', code: 'bad_thing', type: 'invalid_request_error' } } },
    );
    const rateLimited = await rejection(() => responsesStream().finalResponse());
    assert.ok(rateLimited instanceof OpenAI.RateLimitError);
    assert.equal(rateLimited.headers.get('retry-after'), '3');
    assert.equal(rateLimited.code, 'rate_limit_exceeded');
    const overloaded = await rejection(() => anthropicStream().finalMessage());
    assert.ok(overloaded instanceof Anthropic.APIError);
    assert.deepEqual([overloaded.status, overloaded.type], [529, 'overloaded_error']);
    const bad = await rejection(() => chatChunks());
    assert.ok(bad instanceof OpenAI.BadRequestError);
    assert.equal(bad.code, 'bad_thing');
  });

  test('mid-stream-error: text first, then the dialect error event the SDKs raise', async () => {
    fake.enqueue({ kind: 'mid-stream-error', afterText: 'Partial' }, { kind: 'mid-stream-error' }, { kind: 'mid-stream-error', afterText: 'Par', code: 'rate_limit_exceeded' });
    const seenText: string[] = [];
    const responsesError = await rejection(async () => {
      for await (const event of await openai.responses.create({ model: 'm', input: 'hi', stream: true })) {
        if (event.type === 'response.output_text.delta') seenText.push(event.delta);
      }
    });
    assert.equal(seenText.join(''), 'Partial');
    assert.ok(responsesError instanceof OpenAI.APIError);
    assert.equal(responsesError.code, 'server_error');
    const anthropicError = await rejection(() => anthropicStream().finalMessage());
    assert.ok(anthropicError instanceof Anthropic.APIError);
    assert.equal(anthropicError.type, 'overloaded_error');
    const chatError = await rejection(() => chatChunks());
    assert.ok(chatError instanceof OpenAI.APIError);
    assert.equal(chatError.code, 'rate_limit_exceeded');
  });

  test('drop: the connection is cut mid-stream in every dialect', async () => {
    fake.enqueue({ kind: 'drop', afterText: 'Half' }, { kind: 'drop' }, { kind: 'drop', afterText: 'x' });
    for (const call of [() => responsesStream().finalResponse(), () => anthropicStream().finalMessage(), () => chatChunks()]) {
      const error = await rejection(call);
      assert.ok(error instanceof Error);
      assert.ok(!(error instanceof OpenAI.APIError && typeof error.status === 'number'), 'not an HTTP error');
    }
  });

  test('hang: the client can abort, and close() ends streams nobody aborted', async () => {
    fake.enqueue({ kind: 'hang' });
    const controller = new AbortController();
    const before = fake.requests.length;
    const aborted = fetch(`${fake.baseUrl}/messages`, { method: 'POST', body: '{}', signal: controller.signal }).then((response) => response.text());
    await fake.waitForRequests(before + 1);
    assert.equal(fake.pendingSteps(), 0);
    controller.abort();
    assert.equal((await rejection(() => aborted)).name, 'AbortError');

    const other = await startFakeProvider();
    other.enqueue({ kind: 'hang', afterText: 'waiting' });
    const response = await fetch(`${other.baseUrl}/chat/completions`, { method: 'POST', body: '{}' });
    const body = response.text();
    await other.close();
    await rejection(() => body); // the body never completes normally: the socket was destroyed
  });
});

describe('fixtures, raw bodies and bookkeeping', () => {
  test('fixture steps replay byte for byte, in any dialect, and can pick one response of a multi-response file', async () => {
    const fixtures = Object.values(listFixtures()).flat();
    for (const path of fixtures) {
      fake.enqueue({ kind: 'fixture', path });
      const response = await fetch(`${fake.baseUrl}/responses`, { method: 'POST', body: '{}' });
      assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      assert.ok(Buffer.from(await response.arrayBuffer()).equals(fixtureAsSse(path)), path);
    }
    fake.enqueue({ kind: 'fixture', path: 'openai-responses/reasoning-encrypted-store-false-4-steps.chunks.jsonl', response: 3 });
    const last = await responsesStream().finalResponse();
    assert.equal(last.output_text, 'The final result is **570**.');
  });

  test('rebuilt .chunks.jsonl fixtures parse with the official SDKs', async () => {
    const byDialect = listFixtures();
    const rebuilt = (paths: string[]) => paths.filter((path) => path.endsWith('.chunks.jsonl'));
    for (const path of rebuilt(byDialect['anthropic-messages'])) {
      fake.enqueue({ kind: 'fixture', path });
      const events = [];
      for await (const event of await anthropic.messages.create({ model: 'm', max_tokens: 1, messages: [], stream: true })) events.push(event.type);
      assert.equal(events[0], 'message_start', path);
      assert.equal(events.at(-1), 'message_stop', path);
    }
    for (const path of rebuilt(byDialect['openai-chat'])) {
      fake.enqueue({ kind: 'fixture', path });
      const chunks = await chatChunks();
      assert.ok(chunks.some((chunk) => chunk.choices[0]?.finish_reason), path);
    }
  });

  test('raw steps, requests recording, default replies and unknown paths', async () => {
    const before = fake.requests.length;
    fake.enqueue({ kind: 'raw', body: 'data: {"ok":true}\n\n', status: 201, headers: { 'x-extra': 'yes' } });
    const raw = await fetch(`${fake.baseUrl}/chat/completions?x=1`, { method: 'POST', headers: { 'x-test': 'a' }, body: '{"model":"m1"}' });
    assert.deepEqual([raw.status, raw.headers.get('x-extra'), await raw.text()], [201, 'yes', 'data: {"ok":true}\n\n']);
    assert.equal(fake.pendingSteps(), 0);

    const missing = await fetch(`${fake.baseUrl}/embeddings`, { method: 'POST', body: 'not json' });
    assert.equal(missing.status, 404);
    await missing.text();

    fake.setDefaultStep({ kind: 'reply', text: 'Custom default' });
    const fallback = await responsesStream().finalResponse();
    assert.equal(fallback.output_text, 'Custom default');
    fake.setDefaultStep({ kind: 'reply' });

    const seen = await fake.waitForRequests(before + 3, 1000);
    assert.deepEqual(seen.slice(before).map((request) => [request.method, request.path, request.dialect]), [
      ['POST', '/v1/chat/completions', 'openai-chat'],
      ['POST', '/v1/embeddings', null],
      ['POST', '/v1/responses', 'openai-responses'],
    ]);
    assert.deepEqual(seen[before].body, { model: 'm1' });
    assert.equal(seen[before].headers['x-test'], 'a');
    assert.equal(seen[before + 1].body, 'not json');
    await assert.rejects(fake.waitForRequests(before + 10, 20), /saw \d+ of \d+ requests within 20 ms/);
  });

  test('chunkDelayMs spreads the frames over time without changing them', async () => {
    fake.enqueue({ kind: 'reply', id: 'slow', text: 'one two three' }, { kind: 'reply', id: 'slow', text: 'one two three', chunkDelayMs: 5 });
    const read = async () => (await fetch(`${fake.baseUrl}/responses`, { method: 'POST', body: '{"model":"m"}' })).text();
    const quick = await read();
    const started = performance.now();
    const slow = await read();
    assert.equal(slow, quick);
    const frames = quick.split('\n\n').length - 1;
    assert.ok(performance.now() - started >= (frames - 1) * 5 * 0.5, 'frames were spaced out');
  });
});
