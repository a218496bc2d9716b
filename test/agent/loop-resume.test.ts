// The agent loop's durable steps (CONTRACT.md §18): each model response is stored before its calls
// run, each batch of results before the next request; a loop given the steps a former owner
// recorded goes on after them without asking the model again for a recorded response and without
// running a call whose result was recorded.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runAgentLoop, type RecordedStep, type ToolCall } from '../../src/agent/loop.ts';
import type { CanonicalItem, ModelRequest, ProviderAdapter, ProviderEvent } from '../../src/agent/providers/types.ts';

const quietListener = { textDelta() {}, reasoningDelta() {}, toolStarted() {}, toolArguments() {}, attemptFailed() {} };
const user: CanonicalItem = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'do it' }] };
const call = (callId: string): CanonicalItem => ({ type: 'function_call', call_id: callId, name: 'shell', arguments: '{}' });
const output = (callId: string, text: string): CanonicalItem => ({ type: 'function_call_output', call_id: callId, output: text });
const answer = (text: string): CanonicalItem => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
const usage = (input: number) => ({ inputTokens: input, outputTokens: 1, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null });
const modelStep = (input: number) => ({ usage: usage(input), completion: { status: 'completed' as const }, responseId: `resp-${input}`, model: 'm', stopReason: 'stop', apiDurationMs: 5 });

/** Answers each request with the next scripted output, recording every request's input. */
function scriptedAdapter(outputs: CanonicalItem[][], inputs: number[]) {
  const requests: CanonicalItem[][] = [];
  const adapter: ProviderAdapter = {
    dialect: 'openai-responses',
    async *stream(request: ModelRequest): AsyncIterable<ProviderEvent> {
      const index = requests.length;
      requests.push([...(request.input as CanonicalItem[])]);
      for (const item of outputs[index] ?? []) yield { type: 'item.done', item };
      yield { type: 'response.done', responseId: `resp-new-${index}`, model: 'm', usage: usage(inputs[index] ?? 0), completion: { status: 'completed' }, stopReason: 'stop' };
    },
  };
  return { adapter, requests };
}

function loopOptions(adapter: ProviderAdapter, executed: string[], persisted: RecordedStep[]) {
  return {
    adapter,
    transportModel: 'm',
    effort: null,
    instructions: () => '',
    context: [],
    userItem: user,
    tools: () => [],
    executeTool: async (toolCall: ToolCall) => {
      executed.push(toolCall.callId);
      return { output: `ran ${toolCall.callId}`, truncated: false };
    },
    listener: quietListener,
    signal: new AbortController().signal,
    maxSteps: 10,
    persist: async (step: RecordedStep) => void persisted.push(step),
  };
}

describe('the agent loop\'s durable steps', () => {
  it('stores each response before its call runs and each result before the next request, the user message with the first', async () => {
    const { adapter } = scriptedAdapter([[call('c1')], [answer('done')]], [10, 20]);
    const executed: string[] = [];
    const persisted: RecordedStep[] = [];
    const order: string[] = [];
    const options = loopOptions(adapter, executed, persisted);
    const result = await runAgentLoop({
      ...options,
      executeTool: async (toolCall) => {
        order.push(`run ${toolCall.callId} after ${persisted.length} steps`);
        return options.executeTool(toolCall);
      },
    });
    assert.deepEqual(persisted.map((step) => step.items), [[user, call('c1')], [output('c1', 'ran c1')], [answer('done')]]);
    assert.deepEqual(persisted.map((step) => step.modelStep?.usage?.inputTokens ?? null), [10, null, 20]);
    assert.deepEqual(order, ['run c1 after 1 steps']);
    assert.equal(result.assistantText, 'done');
  });

  it('goes on after the recorded steps: a recorded result is not run again, only the unanswered call runs, the recorded response is not asked again', async () => {
    const recorded: RecordedStep[] = [
      { items: [user, call('c1'), call('c2')], modelStep: modelStep(100) },
      { items: [output('c1', 'recorded c1')], modelStep: null },
    ];
    const { adapter, requests } = scriptedAdapter([[answer('after the takeover')]], [7]);
    const executed: string[] = [];
    const persisted: RecordedStep[] = [];
    const result = await runAgentLoop({ ...loopOptions(adapter, executed, persisted), resumeFrom: recorded });
    assert.deepEqual(executed, ['c2']);
    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0], [user, call('c1'), call('c2'), output('c1', 'recorded c1'), output('c2', 'ran c2')]);
    assert.deepEqual(persisted.map((step) => step.items), [[output('c2', 'ran c2')], [answer('after the takeover')]], 'numbered on after the recorded ones');
    assert.equal(result.usage?.inputTokens, 107, 'the recorded response counts once, with the new one');
    assert.equal(result.steps, 2);
    assert.deepEqual(result.items, [user, call('c1'), call('c2'), output('c1', 'recorded c1'), output('c2', 'ran c2'), answer('after the takeover')]);
  });

  it('ends on a recorded answer without asking the model', async () => {
    const recorded: RecordedStep[] = [
      { items: [user, call('c1')], modelStep: modelStep(100) },
      { items: [output('c1', 'recorded c1')], modelStep: null },
      { items: [answer('recorded answer')], modelStep: modelStep(50) },
    ];
    const { adapter, requests } = scriptedAdapter([], []);
    const executed: string[] = [];
    const result = await runAgentLoop({ ...loopOptions(adapter, executed, []), resumeFrom: recorded });
    assert.deepEqual([requests.length, executed.length], [0, 0]);
    assert.deepEqual([result.assistantText, result.responseId, result.usage?.inputTokens, result.completion.status], ['recorded answer', 'resp-50', 150, 'completed']);
  });

  it('asks again a request whose response was not recorded, with the recorded results', async () => {
    const recorded: RecordedStep[] = [
      { items: [user, call('c1')], modelStep: modelStep(100) },
      { items: [output('c1', 'recorded c1')], modelStep: null },
    ];
    const { adapter, requests } = scriptedAdapter([[answer('asked again')]], [3]);
    const executed: string[] = [];
    const result = await runAgentLoop({ ...loopOptions(adapter, executed, []), resumeFrom: recorded });
    assert.deepEqual(executed, []);
    assert.deepEqual(requests, [[user, call('c1'), output('c1', 'recorded c1')]]);
    assert.equal(result.usage?.inputTokens, 103);
  });
});
