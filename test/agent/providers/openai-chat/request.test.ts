/**
 * What the Chat Completions adapter sends, and how it reads streams from a real loopback server:
 * auth headers, quirky tool-call fragments, optional [DONE], in-stream and HTTP errors, abort.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildChatRequest, createOpenAIChatAdapter } from '../../../../src/agent/providers/openai-chat/adapter.ts';
import { ProviderError, type CanonicalItem, type ModelRequest, type ProviderEvent } from '../../../../src/agent/providers/types.ts';
import { startFakeProvider, type FakeProvider } from '../../../support/fake-provider.ts';

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    transportModel: 'qwen3:8b',
    instructions: 'You are a careful agent.',
    input: [{ type: 'message', role: 'user', content: 'hello' }],
    tools: [],
    effort: null,
    ...overrides,
  };
}

test('the request streams with usage, sends the system prompt first and custom tools as one-string functions', () => {
  const tools = [
    { name: 'get_weather', description: 'Weather', kind: 'function' as const, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    { name: 'apply_patch', description: 'Patch', kind: 'custom' as const },
  ];
  const params = buildChatRequest(request({ tools }), 'ollama');
  assert.equal(params.stream, true);
  assert.deepEqual(params.stream_options, { include_usage: true });
  assert.deepEqual(params.messages, [
    { role: 'system', content: 'You are a careful agent.' },
    { role: 'user', content: 'hello' },
  ]);
  assert.deepEqual(params.tools?.[0], { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: tools[0].parameters } });
  const custom = params.tools?.[1];
  assert.ok(custom && custom.type === 'function');
  assert.deepEqual((custom.function.parameters as { required: string[] }).required, ['input']);
});

test('effort becomes reasoning_effort (omitted for none and null); output limits use each server family\'s field', () => {
  const effortOf = (effort: ModelRequest['effort']) => buildChatRequest(request({ effort }), 'ollama').reasoning_effort;
  assert.equal(effortOf(null), undefined);
  assert.equal(effortOf('none'), undefined);
  assert.equal(effortOf('low'), 'low');
  assert.equal(effortOf('medium'), 'medium');
  assert.equal(effortOf('high'), 'high');
  assert.equal(effortOf('xhigh'), 'high');
  assert.equal(effortOf('max'), 'high');
  const local = buildChatRequest(request({ maxOutputTokens: 500 }), 'ollama');
  assert.equal(local.max_tokens, 500);
  assert.equal(local.max_completion_tokens, undefined);
  const openai = buildChatRequest(request({ maxOutputTokens: 500 }), 'openai');
  assert.equal(openai.max_completion_tokens, 500);
  assert.equal(openai.max_tokens, undefined);
});

let fake: FakeProvider;
before(async () => {
  fake = await startFakeProvider();
});
after(async () => {
  await fake.close();
});

const adapter = (apiKey: string | null = 'sk-loopback-chat-key', provider = 'ollama') => createOpenAIChatAdapter({ provider, baseUrl: fake.baseUrl, apiKey });

async function run(stream: AsyncIterable<ProviderEvent>): Promise<{ events: ProviderEvent[]; items: CanonicalItem[]; error: unknown }> {
  const events: ProviderEvent[] = [];
  let error: unknown = null;
  try {
    for await (const event of stream) events.push(event);
  } catch (caught) {
    error = caught;
  }
  return { events, items: events.flatMap((event) => (event.type === 'item.done' ? [event.item] : [])), error };
}

const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-raw', object: 'chat.completion.chunk', model: 'raw-model', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;

test('a scripted reply round-trips through a loopback server with the key as a bearer token', async () => {
  fake.enqueue({ kind: 'reply', text: 'Checking.', reasoning: 'think first', toolCalls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}', callId: 'call_oslo' }] });
  const { items, error } = await run(adapter().stream(request(), new AbortController().signal));
  assert.equal(error, null);
  const seen = fake.requests[fake.requests.length - 1];
  assert.equal(seen.path, '/v1/chat/completions');
  assert.equal(seen.headers.authorization, 'Bearer sk-loopback-chat-key');
  assert.deepEqual(items.map((item) => item.type), ['reasoning', 'message', 'function_call']);
  assert.deepEqual(items[2], { type: 'function_call', call_id: 'call_oslo', name: 'get_weather', arguments: '{"city":"Oslo"}' });
});

test('a keyless connection sends no Authorization header and never the environment key', async () => {
  const saved = process.env.OPENAI_API_KEY;
  process.env.OPENAI_API_KEY = 'sk-from-the-environment';
  try {
    const { error } = await run(adapter(null).stream(request(), new AbortController().signal));
    assert.equal(error, null);
    const seen = fake.requests[fake.requests.length - 1];
    assert.equal(seen.headers.authorization, undefined);
    assert.ok(!JSON.stringify(seen.headers).includes('sk-from-the-environment'));
  } finally {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  }
});

test('tool calls are keyed by index: late starts, empty fragments and missing ids are handled', async () => {
  const body = [
    chunk({ role: 'assistant', content: null }),
    chunk({ tool_calls: [{ index: 1, type: 'function', function: { name: 'lookup', arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '{"q":' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '"x"}' } }] }),
    chunk({}, 'tool_calls'),
  ].join(''); // no [DONE]: the finish_reason is enough
  fake.enqueue({ kind: 'raw', body });
  const { items, events, error } = await run(adapter().stream(request(), new AbortController().signal));
  assert.equal(error, null);
  assert.equal(items.length, 1);
  assert.equal(items[0].name, 'lookup');
  assert.equal(items[0].arguments, '{"q":"x"}');
  assert.match(String(items[0].call_id), /^call_[0-9a-f]{24}$/, 'a generated id when the server gave none');
  const started = events.find((event) => event.type === 'tool.started');
  assert.equal(started?.type === 'tool.started' && started.callId, items[0].call_id);
});

test('a stream that ends without a finish_reason is a retryable early end', async () => {
  fake.enqueue({ kind: 'raw', body: chunk({ content: 'half an ans' }) });
  const { error, events } = await run(adapter().stream(request(), new AbortController().signal));
  assert.ok(error instanceof ProviderError);
  assert.equal(error.code, 'stream_ended_early');
  assert.equal(error.retryable, true);
  assert.ok(!events.some((event) => event.type === 'response.done'));
});

test('an {error} data payload mid-stream fails the stream with the provider named', async () => {
  const body = chunk({ content: 'Hel' }) + `data: ${JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } })}\n\n`;
  fake.enqueue({ kind: 'raw', body });
  const { error } = await run(adapter('k', 'openrouter').stream(request(), new AbortController().signal));
  assert.ok(error instanceof ProviderError);
  assert.equal(error.retryable, true);
  assert.match(error.message, /openrouter/);
});

test('an event: error with a 503 status inside is retryable', async () => {
  fake.enqueue({ kind: 'mid-stream-error', afterText: 'partial' });
  const { error } = await run(adapter('k', 'groq').stream(request(), new AbortController().signal));
  assert.ok(error instanceof ProviderError);
  assert.equal(error.retryable, true);
  assert.match(error.message, /groq/);
});

test('HTTP 429 with retry-after is retryable with the hint; HTTP 400 is not', async () => {
  fake.enqueue({ kind: 'http-error', status: 429, headers: { 'retry-after': '2' } });
  const limited = (await run(adapter().stream(request(), new AbortController().signal))).error;
  assert.ok(limited instanceof ProviderError);
  assert.equal(limited.status, 429);
  assert.equal(limited.retryable, true);
  assert.equal(limited.retryAfterMs, 2000);
  fake.enqueue({ kind: 'http-error', status: 400 });
  const invalid = (await run(adapter().stream(request(), new AbortController().signal))).error;
  assert.ok(invalid instanceof ProviderError);
  assert.equal(invalid.status, 400);
  assert.equal(invalid.retryable, false);
});

test('aborting a hung stream ends it with the abort, not a ProviderError', async () => {
  fake.enqueue({ kind: 'hang', afterText: 'waiting' });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const { error } = await run(adapter().stream(request(), controller.signal));
  assert.ok(error !== null && !(error instanceof ProviderError));
  assert.equal((error as Error).name, 'AbortError');
});
