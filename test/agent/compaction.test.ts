import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  IMAGE_TOKEN_ESTIMATE,
  SUMMARY_PREFIX,
  contextBudget,
  estimateTokens,
  newestThatFit,
  summarizeContext,
  summaryContextItem,
} from '../../src/agent/compaction.ts';
import type { StepListener } from '../../src/agent/model-step.ts';
import type { CanonicalItem, ToolSpec } from '../../src/agent/providers/types.ts';
import { createProviderAdapter } from '../../src/agent/providers/index.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';

const user = (text: string): CanonicalItem => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const assistant = (text: string): CanonicalItem => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
const call = (id: string): CanonicalItem => ({ type: 'function_call', call_id: id, name: 'shell', arguments: '{}' });
const output = (id: string, text: string): CanonicalItem => ({ type: 'function_call_output', call_id: id, output: text });
const shellSpec: ToolSpec = { name: 'shell', description: 'run a command', kind: 'function', parameters: { type: 'object', properties: {} } };

describe('token estimate and budget', () => {
  it('counts a quarter of the JSON length, and an inline image as a fixed amount', () => {
    assert.equal(estimateTokens('abcdefgh'), Math.ceil('"abcdefgh"'.length / 4));
    const image = { type: 'input_image', image_url: `data:image/png;base64,${'A'.repeat(400_000)}` };
    const estimate = estimateTokens([image]);
    assert.ok(estimate >= IMAGE_TOKEN_ESTIMATE && estimate < IMAGE_TOKEN_ESTIMATE + 20, String(estimate));
    assert.ok(estimateTokens([user('x'.repeat(4_000))]) > 1_000);
  });

  it('leaves a fifth of the window for the reply and the estimate\'s error; no window means no limit', () => {
    assert.equal(contextBudget(10_000), 8_000);
    assert.equal(contextBudget(null), null);
  });

  it('shapes the summary as one user message', () => {
    assert.deepEqual(summaryContextItem('done so far'), { type: 'message', role: 'user', content: [{ type: 'input_text', text: `${SUMMARY_PREFIX}done so far` }] });
  });
});

describe('newestThatFit', () => {
  const items = [user('a'.repeat(400)), assistant('b'.repeat(400)), user('c'.repeat(40)), call('1'), output('1', 'd'.repeat(400)), assistant('e'.repeat(40))];

  it('keeps everything that fits', () => {
    assert.deepEqual(newestThatFit(items, 100_000), items);
  });

  it('starts at a user message, so tool outputs keep their calls', () => {
    const budget = items.slice(1).reduce((sum, item) => sum + estimateTokens(item), 0);
    assert.deepEqual(newestThatFit(items, budget), items.slice(2));
  });

  it('without a user message in reach, drops leading outputs and keeps at least the newest item', () => {
    const tail = estimateTokens(items[4]) + estimateTokens(items[5]);
    assert.deepEqual(newestThatFit(items, tail), [items[5]]);
    assert.deepEqual(newestThatFit(items, 1), [items[5]]);
    assert.deepEqual(newestThatFit([], 10), []);
  });
});

describe('summarizeContext', () => {
  let fake: FakeProvider;
  const listener: StepListener = { textDelta() {}, reasoningDelta() {}, toolStarted() {}, toolArguments() {}, attemptFailed() {} };
  before(async () => {
    fake = await startFakeProvider();
  });
  after(async () => fake.close());
  const adapter = async () => await createProviderAdapter('openai-responses', { provider: 'fake', baseUrl: fake.baseUrl, apiKey: null });

  it('asks the model once, without tools, and summarises only the newest part that fits the window', async () => {
    const context = [user('old '.repeat(2_000)), assistant('old answer'), user('recent question'), assistant('recent answer')];
    fake.enqueue({ kind: 'reply', text: '  The summary.  ' });
    const summary = await summarizeContext({ adapter: await adapter(), transportModel: 'm', tools: [shellSpec], contextWindow: 1_000, context, listener, signal: new AbortController().signal });
    assert.equal(summary.text, 'The summary.');
    const body = fake.requests[fake.requests.length - 1].body;
    assert.ok(!body.tools || body.tools.length === 0);
    const texts = body.input.map((item: any) => item.content[0].text);
    assert.deepEqual(texts.slice(0, 2), ['recent question', 'recent answer']);
    assert.equal(texts.length, 3);
  });

  it('offers the tools only when the context holds tool calls, and takes the text of a reply that calls one anyway', async () => {
    fake.enqueue({ kind: 'reply', text: 'Ran a shell command.', toolCalls: [{ name: 'shell', arguments: '{}' }] });
    const context = [user('list files'), call('c1'), output('c1', 'a.txt'), assistant('There is a.txt.')];
    const summary = await summarizeContext({ adapter: await adapter(), transportModel: 'm', tools: [shellSpec], contextWindow: null, context, listener, signal: new AbortController().signal });
    assert.equal(summary.text, 'Ran a shell command.');
    const body = fake.requests[fake.requests.length - 1].body;
    assert.deepEqual(body.tools.map((tool: any) => tool.name), ['shell']);
    assert.deepEqual(body.input.map((item: any) => item.type), ['message', 'function_call', 'function_call_output', 'message', 'message']);
  });

  it('refuses an empty summary rather than wiping the context', async () => {
    fake.enqueue({ kind: 'reply', text: '   ' });
    await assert.rejects(
      summarizeContext({ adapter: await adapter(), transportModel: 'm', tools: [shellSpec], contextWindow: null, context: [user('q'), assistant('a')], listener, signal: new AbortController().signal }),
      /empty summary/,
    );
  });
});
