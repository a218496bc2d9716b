/**
 * What the Anthropic adapter sends (thinking budgets, prompt-cache breakpoints, tools) and how it
 * behaves against a real loopback server: auth headers, in-stream errors, HTTP errors, drops, abort.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildAnthropicRequest, createAnthropicMessagesAdapter } from '../../../../src/agent/providers/anthropic-messages/adapter.ts';
import { ProviderError, type CanonicalItem, type ModelRequest, type ProviderEvent } from '../../../../src/agent/providers/types.ts';
import { startFakeProvider, type FakeProvider } from '../../../support/fake-provider.ts';

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    transportModel: 'claude-test',
    instructions: 'You are a careful agent.',
    input: [{ type: 'message', role: 'user', content: 'hello' }],
    tools: [],
    effort: null,
    ...overrides,
  };
}

const weatherTool = { name: 'get_weather', description: 'Weather', kind: 'function' as const, parameters: { type: 'object', properties: { city: { type: 'string' } } } };
const patchTool = { name: 'apply_patch', description: 'Patch', kind: 'custom' as const, format: { type: 'grammar' as const, syntax: 'lark' as const, definition: 'start: "x"' } };

test('effort maps to a thinking budget below max_tokens; none and null disable thinking', () => {
  const budgets = { low: 2048, medium: 8192, high: 16384, xhigh: 32000, max: 32000 } as const;
  for (const [effort, budget] of Object.entries(budgets)) {
    const params = buildAnthropicRequest(request({ effort: effort as keyof typeof budgets }));
    assert.deepEqual(params.thinking, { type: 'enabled', budget_tokens: budget }, effort);
    assert.ok(params.max_tokens > budget, `${effort}: max_tokens must exceed the budget`);
  }
  assert.equal(buildAnthropicRequest(request({ effort: 'none' })).thinking, undefined);
  assert.equal(buildAnthropicRequest(request({ effort: null })).thinking, undefined);
});

test('a caller output limit is kept and the thinking budget shrinks to fit under it', () => {
  const shrunk = buildAnthropicRequest(request({ effort: 'high', maxOutputTokens: 10000 }));
  assert.equal(shrunk.max_tokens, 10000);
  assert.deepEqual(shrunk.thinking, { type: 'enabled', budget_tokens: 8976 });
  const tooSmall = buildAnthropicRequest(request({ effort: 'low', maxOutputTokens: 1500 }));
  assert.equal(tooSmall.max_tokens, 1500);
  assert.equal(tooSmall.thinking, undefined, 'no room for the 1024-token minimum budget');
});

test('prompt-cache breakpoints sit on the system prompt, the last tool and the last item before the new input', () => {
  const input: CanonicalItem[] = [
    { type: 'message', role: 'user', content: 'What is the weather in Paris?' },
    { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
  ];
  const params = buildAnthropicRequest(request({ input, tools: [weatherTool, patchTool] }));
  assert.deepEqual(params.system, [{ type: 'text', text: 'You are a careful agent.', cache_control: { type: 'ephemeral' } }]);
  assert.equal(params.tools?.[0].cache_control, undefined);
  assert.deepEqual(params.tools?.[1].cache_control, { type: 'ephemeral' });
  assert.deepEqual(params.messages[1], {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' }, cache_control: { type: 'ephemeral' } }],
  });
  const breakpoints = JSON.stringify(params).split('"cache_control"').length - 1;
  assert.equal(breakpoints, 3, 'Anthropic allows at most four');
  assert.deepEqual(params.messages[2], { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }] });
});

test('a first message has no earlier item to cache; an empty system prompt is left out', () => {
  const params = buildAnthropicRequest(request({ instructions: '' }));
  assert.equal(params.system, undefined);
  assert.ok(!JSON.stringify(params).includes('cache_control'));
});

test('custom tools are sent with one string parameter that carries the grammar', () => {
  const params = buildAnthropicRequest(request({ tools: [patchTool] }));
  const schema = (params.tools?.[0] as { input_schema: unknown }).input_schema as { properties: { input: { type: string; description: string } }; required: string[] };
  assert.equal(schema.properties.input.type, 'string');
  assert.deepEqual(schema.required, ['input']);
  assert.match(schema.properties.input.description, /lark grammar:\nstart: "x"/);
});

test('a tool loop continued from another dialect runs without thinking instead of being rejected', () => {
  const foreignLoop: CanonicalItem[] = [
    { type: 'message', role: 'user', content: 'weather?' },
    { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'openai-blob' },
    { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
  ];
  const foreign = buildAnthropicRequest(request({ input: foreignLoop, effort: 'high' }));
  assert.equal(foreign.thinking, undefined);
  assert.ok(!JSON.stringify(foreign.messages).includes('openai-blob'), 'OpenAI reasoning is never sent to Anthropic');

  const ownLoop = foreignLoop.map((item) =>
    item.type === 'reasoning' ? { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'hmm' }], encrypted_content: 'sig', provider: 'anthropic' } : item,
  );
  const own = buildAnthropicRequest(request({ input: ownLoop, effort: 'high' }));
  assert.deepEqual(own.thinking, { type: 'enabled', budget_tokens: 16384 });
  assert.deepEqual((own.messages[1].content as Array<{ type: string }>)[0], { type: 'thinking', thinking: 'hmm', signature: 'sig' });
});

let fake: FakeProvider;
before(async () => {
  fake = await startFakeProvider();
});
after(async () => {
  await fake.close();
});

async function collect(stream: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function failure(stream: AsyncIterable<ProviderEvent>): Promise<{ error: unknown; events: ProviderEvent[] }> {
  const events: ProviderEvent[] = [];
  try {
    for await (const event of stream) events.push(event);
  } catch (error) {
    return { error, events };
  }
  assert.fail('the stream should have failed');
}

test('talks to a loopback server at a ".../v1" base URL with the key in x-api-key', async () => {
  fake.enqueue({ kind: 'reply', text: 'Hi there', reasoning: 'thinking hard', usage: { input: 10, output: 5, cached: 4 } });
  const adapter = createAnthropicMessagesAdapter({ provider: 'anthropic', baseUrl: fake.baseUrl, apiKey: 'sk-ant-loopback-key' });
  const events = await collect(adapter.stream(request({ effort: 'low' }), new AbortController().signal));
  const seen = fake.requests[fake.requests.length - 1];
  assert.equal(seen.path, '/v1/messages');
  assert.equal(seen.headers['x-api-key'], 'sk-ant-loopback-key');
  assert.equal(seen.body.stream, true);
  const items = events.flatMap((event) => (event.type === 'item.done' ? [event.item] : []));
  assert.deepEqual(items.map((item) => item.type), ['reasoning', 'message']);
  assert.ok(String(items[0].encrypted_content).length > 0, 'the thinking signature is kept');
  const done = events[events.length - 1];
  assert.equal(done.type, 'response.done');
  assert.deepEqual(done.type === 'response.done' && done.usage, {
    inputTokens: 14, outputTokens: 5, cachedTokens: 4, cacheCreationTokens: 0, reasoningTokens: null, webSearchRequests: null,
  });
});

test('a keyless connection sends no x-api-key and never reads the environment key', async () => {
  const saved = process.env.ANTHROPIC_API_KEY;
  process.env.ANTHROPIC_API_KEY = 'sk-ant-from-environment';
  try {
    const adapter = createAnthropicMessagesAdapter({ provider: 'local-claude', baseUrl: fake.baseUrl, apiKey: null });
    await collect(adapter.stream(request(), new AbortController().signal));
    const seen = fake.requests[fake.requests.length - 1];
    assert.equal(seen.headers['x-api-key'], undefined);
    assert.ok(!JSON.stringify(seen.headers).includes('sk-ant-from-environment'));
  } finally {
    if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = saved;
  }
});

test('a mid-stream overloaded_error after some text is a retryable ProviderError', async () => {
  fake.enqueue({ kind: 'mid-stream-error', afterText: 'Partial answer', code: 'overloaded_error', message: 'Overloaded' });
  const adapter = createAnthropicMessagesAdapter({ provider: 'anthropic', baseUrl: fake.baseUrl, apiKey: 'k' });
  const { error, events } = await failure(adapter.stream(request(), new AbortController().signal));
  assert.ok(events.some((event) => event.type === 'text.delta'), 'text arrived before the error');
  assert.ok(error instanceof ProviderError);
  assert.equal(error.retryable, true);
  assert.equal(error.code, 'overloaded_error');
  assert.match(error.message, /anthropic/);
});

test('HTTP 529 is retryable and honours retry-after; a spend-limit 429 is not retryable', async () => {
  const adapter = createAnthropicMessagesAdapter({ provider: 'anthropic', baseUrl: fake.baseUrl, apiKey: 'k' });
  fake.enqueue({ kind: 'http-error', status: 529, headers: { 'retry-after': '3' } });
  const overloaded = (await failure(adapter.stream(request(), new AbortController().signal))).error;
  assert.ok(overloaded instanceof ProviderError);
  assert.equal(overloaded.status, 529);
  assert.equal(overloaded.retryable, true);
  assert.equal(overloaded.retryAfterMs, 3000);

  const spendCap = {
    type: 'error',
    error: { type: 'rate_limit_error', message: 'spend limit reached', details: { error_code: 'enforced_spend_limit_reached' } },
  };
  fake.enqueue({ kind: 'http-error', status: 429, body: spendCap });
  const capped = (await failure(adapter.stream(request(), new AbortController().signal))).error;
  assert.ok(capped instanceof ProviderError);
  assert.equal(capped.status, 429);
  assert.equal(capped.retryable, false);
});

test('a connection dropped mid-stream is a retryable stream error, not a completed response', async () => {
  fake.enqueue({ kind: 'drop', afterText: 'cut off here' });
  const adapter = createAnthropicMessagesAdapter({ provider: 'anthropic', baseUrl: fake.baseUrl, apiKey: 'k' });
  const { error, events } = await failure(adapter.stream(request(), new AbortController().signal));
  assert.ok(error instanceof ProviderError);
  assert.equal(error.retryable, true);
  assert.ok(!events.some((event) => event.type === 'response.done'));
});

test('aborting a hung stream ends it with the abort, not a ProviderError', async () => {
  fake.enqueue({ kind: 'hang', afterText: 'waiting' });
  const adapter = createAnthropicMessagesAdapter({ provider: 'anthropic', baseUrl: fake.baseUrl, apiKey: 'k' });
  const controller = new AbortController();
  const pending = failure(adapter.stream(request(), controller.signal));
  setTimeout(() => controller.abort(), 100);
  const { error } = await pending;
  assert.ok(!(error instanceof ProviderError));
  assert.equal((error as Error).name, 'AbortError');
});
