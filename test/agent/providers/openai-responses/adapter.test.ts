/** The OpenAI Responses adapter's requests, failures and cancellation, against the loopback fake provider. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildResponsesRequest, createOpenAIResponsesAdapter, responsesRequestJson } from '../../../../src/agent/providers/openai-responses/adapter.ts';
import { ProviderError, type ProviderAdapter } from '../../../../src/agent/providers/types.ts';
import { type FakeProvider, fakeEncryptedReasoning, startFakeProvider } from '../../../support/fake-provider.ts';
import { fixturePath } from '../../../support/fixtures.ts';
import { readFileSync } from 'node:fs';
import { caught, collect, modelRequest } from './harness.ts';

const API_KEY = 'sk-test-abcdefghijklmnop';
let fake: FakeProvider;
let adapter: ProviderAdapter;

before(async () => {
  fake = await startFakeProvider();
  adapter = createOpenAIResponsesAdapter({ provider: 'openai', baseUrl: fake.baseUrl, apiKey: API_KEY });
});
after(() => fake.close());

const run = (request = modelRequest(), signal = new AbortController().signal) => collect(adapter.stream(request, signal));
const lastBody = () => fake.requests.at(-1)?.body;

function sse(events: Array<Record<string, unknown>>): string {
  return events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join('');
}
const created = { type: 'response.created', response: { id: 'resp_raw', model: 'gpt-raw', status: 'in_progress', output: [] } };
const textDelta = (delta: string) => ({ type: 'response.output_text.delta', item_id: 'msg_raw', output_index: 0, content_index: 0, delta });

describe('request body', () => {
  test('is stateless: store false, whole input replayed, encrypted reasoning requested', async () => {
    const input = [
      { type: 'message', role: 'user', content: 'What is 2+2?' },
      { id: 'rs_1', type: 'reasoning', summary: [], encrypted_content: 'gAAAA-opaque' },
      { type: 'function_call', call_id: 'call_1', name: 'calc', arguments: '{"a":2}' },
      { type: 'function_call_output', call_id: 'call_1', output: '4' },
    ];
    await run(modelRequest({ input, maxOutputTokens: 900, transportModel: 'gpt-5.1' }));
    const body = lastBody();
    assert.equal(fake.requests.at(-1)?.path, '/v1/responses');
    assert.equal(body.model, 'gpt-5.1');
    assert.equal(body.stream, true);
    assert.equal(body.store, false);
    assert.equal(body.previous_response_id, undefined);
    assert.deepEqual(body.input, input);
    assert.equal(body.instructions, 'You are a test.');
    assert.deepEqual(body.include, ['reasoning.encrypted_content']);
    assert.deepEqual(body.reasoning, { effort: 'medium', summary: 'auto' });
    assert.equal(body.max_output_tokens, 900);
    assert.equal(fake.requests.at(-1)?.headers.authorization, `Bearer ${API_KEY}`);
  });

  test('maps function and custom tools', async () => {
    const parameters = { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] };
    const grammar = { type: 'grammar' as const, syntax: 'lark' as const, definition: 'start: /.+/' };
    await run(modelRequest({
      tools: [
        { name: 'shell', description: 'Run a command', kind: 'function', parameters },
        { name: 'apply_patch', description: 'Apply a patch', kind: 'custom', format: grammar },
        { name: 'note', description: 'Free text', kind: 'custom' },
      ],
    }));
    assert.deepEqual(lastBody().tools, [
      { type: 'function', name: 'shell', description: 'Run a command', parameters, strict: false },
      { type: 'custom', name: 'apply_patch', description: 'Apply a patch', format: grammar },
      { type: 'custom', name: 'note', description: 'Free text' },
    ]);
  });

  test('the body written with kept tool JSON is the body the SDK would have written', async () => {
    const shell = { name: 'shell', description: 'Run "this"\n', kind: 'function' as const, parameters: { type: 'object', properties: { cmd: { type: 'string' } } } };
    const note = { name: 'note', description: 'Free text ✓', kind: 'custom' as const };
    for (const request of [modelRequest({ tools: [shell, note] }), modelRequest({ tools: [note, shell], effort: null }), modelRequest({ tools: [] })]) {
      assert.deepEqual(JSON.parse(responsesRequestJson(request)), buildResponsesRequest(request));
    }
    assert.equal('tools' in JSON.parse(responsesRequestJson(modelRequest({ tools: [] }))), false);
    await run(modelRequest({ tools: [note] }));
    assert.equal(fake.requests.at(-1)?.headers['content-type'], 'application/json');
    assert.deepEqual(lastBody().tools, [{ type: 'custom', name: 'note', description: 'Free text ✓' }]);
  });

  test('maps effort: none sends no reasoning, null (a non-reasoning model) sends no include either', async () => {
    const sent = [];
    for (const effort of ['none', null, 'low', 'high', 'xhigh', 'max'] as const) {
      await run(modelRequest({ effort }));
      sent.push([effort, lastBody().reasoning?.effort ?? null, lastBody().include ?? null]);
    }
    assert.deepEqual(sent, [
      ['none', null, ['reasoning.encrypted_content']],
      [null, null, null],
      ['low', 'low', ['reasoning.encrypted_content']],
      ['high', 'high', ['reasoning.encrypted_content']],
      ['xhigh', 'xhigh', ['reasoning.encrypted_content']],
      ['max', 'max', ['reasoning.encrypted_content']],
    ]);
  });

  test('a keyless connection sends no Authorization header and ignores OPENAI_API_KEY', async () => {
    const previous = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-from-the-environment-must-not-leak';
    try {
      const keyless = createOpenAIResponsesAdapter({ provider: 'lmstudio', baseUrl: fake.baseUrl, apiKey: null });
      await collect(keyless.stream(modelRequest(), new AbortController().signal));
      assert.equal(fake.requests.at(-1)?.headers.authorization, undefined);
    } finally {
      if (previous === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previous;
    }
  });

  test('uses the fetch it is given', async () => {
    let calls = 0;
    const countingFetch: typeof fetch = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    const withFetch = createOpenAIResponsesAdapter({ provider: 'openai', baseUrl: fake.baseUrl, apiKey: API_KEY }, { fetch: countingFetch });
    await collect(withFetch.stream(modelRequest(), new AbortController().signal));
    assert.equal(calls, 1);
  });
});

describe('streamed replies', () => {
  test('reasoning, text and both tool kinds arrive as events and canonical items', async () => {
    fake.enqueue({
      kind: 'reply', id: 'r1', reasoning: 'Think first.', text: 'Running it.',
      toolCalls: [
        { name: 'shell', arguments: '{"cmd":"ls -la"}', callId: 'call_shell' },
        { name: 'apply_patch', arguments: '*** Begin Patch\n*** End Patch', callId: 'call_patch', kind: 'custom' },
      ],
      usage: { input: 100, output: 40, cached: 64, reasoning: 12 },
    });
    const result = await run();
    assert.equal(result.reasoning, 'Think first.');
    assert.equal(result.text, 'Running it.');
    assert.deepEqual(result.toolStarts, [
      { callId: 'call_shell', name: 'shell', kind: 'function' },
      { callId: 'call_patch', name: 'apply_patch', kind: 'custom' },
    ]);
    assert.deepEqual(result.argumentsByCall, { call_shell: '{"cmd":"ls -la"}', call_patch: '*** Begin Patch\n*** End Patch' });
    assert.deepEqual(result.items.map((item) => item.type), ['reasoning', 'message', 'function_call', 'custom_tool_call']);
    assert.equal(result.items[0].encrypted_content, fakeEncryptedReasoning('rs_r1_0'));
    assert.equal(result.items[3].input, '*** Begin Patch\n*** End Patch');
    assert.deepEqual(result.done?.usage, { inputTokens: 100, outputTokens: 40, cachedTokens: 64, cacheCreationTokens: null, reasoningTokens: 12, webSearchRequests: null });
    assert.equal(result.done?.responseId, 'resp_r1');
    assert.equal(result.done?.model, 'gpt-test');
  });

  test('response.incomplete becomes an incomplete completion with its reason', async () => {
    fake.enqueue({ kind: 'reply', text: 'Cut sho', stop: 'max_tokens' });
    const result = await run();
    assert.equal(result.text, 'Cut sho');
    assert.deepEqual(result.done?.completion, { status: 'incomplete', reason: 'max_output_tokens' });
    assert.equal(result.done?.stopReason, 'incomplete');
  });

  test('unknown event types are ignored', async () => {
    const body = sse([
      created,
      { type: 'response.some_future_event', payload: { anything: true } },
      textDelta('still '),
      { type: 'response.shell_call_command.delta', delta: 'ignored' },
      textDelta('fine'),
      { type: 'response.completed', response: { id: 'resp_raw', model: 'gpt-raw', status: 'completed', output: [], usage: null } },
    ]);
    fake.enqueue({ kind: 'raw', body });
    const result = await run();
    assert.equal(result.text, 'still fine');
    assert.equal(result.done?.usage, null);
    assert.deepEqual(result.events.map((event) => event.type), ['text.delta', 'text.delta', 'response.done']);
  });

  test('output items missing from the stream are taken from the final response', async () => {
    const message = { id: 'msg_late', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'late' }] };
    fake.enqueue({ kind: 'raw', body: sse([created, { type: 'response.completed', response: { id: 'resp_raw', status: 'completed', output: [message] } }]) });
    const result = await run();
    assert.deepEqual(result.items, [message]);
  });
});

describe('failures', () => {
  test('HTTP 429 rate limit is retryable and carries retry-after', async () => {
    fake.enqueue({ kind: 'http-error', status: 429, headers: { 'retry-after': '7' } });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.status, error.code, error.retryable, error.retryAfterMs], [429, 'rate_limit_exceeded', true, 7000]);
    assert.match(error.message, /^openai returned HTTP 429/);
  });

  test('HTTP 429 insufficient_quota is not retryable', async () => {
    const body = { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } };
    fake.enqueue({ kind: 'http-error', status: 429, body });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.status, error.code, error.retryable], [429, 'insufficient_quota', false]);
  });

  test('the recorded HTTP 400 body is a permanent error naming its code', async () => {
    const body = readFileSync(fixturePath('errors/openai-responses-400-invalid-param.json'), 'utf8');
    fake.enqueue({ kind: 'http-error', status: 400, body });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.status, error.code, error.retryable], [400, 'decimal_below_min_value', false]);
  });

  test('HTTP 503 is retryable; a key echoed by the provider is scrubbed from the message', async () => {
    fake.enqueue({ kind: 'http-error', status: 503, body: { error: { message: `Upstream rejected key ${API_KEY}`, code: 'server_error' } } });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.equal(error.retryable, true);
    assert.ok(!error.message.includes(API_KEY));
    assert.match(error.message, /\[redacted\]/);
  });

  test('an error event mid-stream: text already streamed is delivered, then a retryable ProviderError', async () => {
    fake.enqueue({ kind: 'mid-stream-error', afterText: 'Partial answer' });
    const events: string[] = [];
    const error = await caught(async () => {
      for await (const event of adapter.stream(modelRequest(), new AbortController().signal)) {
        if (event.type === 'text.delta') events.push(event.text);
      }
    });
    assert.equal(events.join(''), 'Partial answer');
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.code, error.retryable, error.status], ['server_error', true, null]);
  });

  test('the flat error event shape (code at top level) is understood too', async () => {
    fake.enqueue({ kind: 'raw', body: sse([created, { type: 'error', code: 'rate_limit_exceeded', message: 'Slow down', param: null }]) });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.code, error.retryable], ['rate_limit_exceeded', true]);
  });

  test('response.failed without an error event fails with its response.error', async () => {
    const failed = { type: 'response.failed', response: { id: 'resp_raw', status: 'failed', error: { code: 'invalid_prompt', message: 'Bad prompt' } } };
    fake.enqueue({ kind: 'raw', body: sse([created, failed]) });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.code, error.retryable], ['invalid_prompt', false]);
    assert.match(error.message, /Bad prompt/);
  });

  test('a stream that ends without a terminal event is a retryable "stream ended early"', async () => {
    fake.enqueue({ kind: 'raw', body: sse([created, textDelta('half')]) });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.code, error.retryable], ['stream_ended_early', true]);
    assert.match(error.message, /stream ended early/);
  });

  test('a dropped connection is a retryable connection error', async () => {
    fake.enqueue({ kind: 'drop', afterText: 'Some text' });
    const error = await caught(() => run());
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.code, error.retryable], ['connection_error', true]);
  });

  test('a refused connection is a retryable connection error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = createOpenAIResponsesAdapter({ provider: 'openai', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: API_KEY });
    const error = await caught(() => collect(unreachable.stream(modelRequest(), new AbortController().signal)));
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.code, error.retryable, error.status], ['connection_error', true, null]);
    assert.ok(!error.message.includes(API_KEY));
  });
});

describe('cancellation', () => {
  test('aborting a hung stream ends it with the abort reason', async () => {
    fake.enqueue({ kind: 'hang', afterText: 'thinking' });
    const controller = new AbortController();
    const before = fake.requests.length;
    const seen: string[] = [];
    const pending = caught(async () => {
      for await (const event of adapter.stream(modelRequest(), controller.signal)) if (event.type === 'text.delta') seen.push(event.text);
    });
    await fake.waitForRequests(before + 1);
    while (seen.join('') !== 'thinking') await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    const error = await pending;
    assert.ok(error instanceof Error);
    assert.equal(error.name, 'AbortError');
    assert.ok(!(error instanceof ProviderError));
  });

  test('an already aborted signal throws before any request is made', async () => {
    const controller = new AbortController();
    controller.abort();
    const before = fake.requests.length;
    const error = await caught(() => run(modelRequest(), controller.signal));
    assert.equal((error as Error).name, 'AbortError');
    assert.equal(fake.requests.length, before);
  });
});
