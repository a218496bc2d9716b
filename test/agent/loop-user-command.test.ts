// `!command` (CONTRACT.md §24): the loop runs the user's command as a `shell` call and asks the
// model nothing; the call is recorded before it runs, so a resumed turn (--cluster) goes on from
// the record alone and never runs a call whose output was recorded.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runAgentLoop, type RecordedStep, type ToolCall } from '../../src/agent/loop.ts';
import { userCommandOf, userCommandText } from '../../src/agent/user-command.ts';
import type { ProviderAdapter } from '../../src/agent/providers/types.ts';

const quietListener = { textDelta() {}, reasoningDelta() {}, toolStarted() {}, toolArguments() {}, attemptFailed() {} };
const silentModel: ProviderAdapter = {
  dialect: 'openai-responses',
  async *stream() {
    throw new Error('the model was asked');
  },
};

function options(executed: ToolCall[], persisted: RecordedStep[]) {
  return {
    adapter: silentModel, transportModel: 'm', effort: null, instructions: () => '', context: [],
    userItem: { type: 'message', role: 'user', content: 'ls' }, tools: () => [], listener: quietListener,
    signal: new AbortController().signal, maxSteps: 10,
    executeTool: async (call: ToolCall) => (executed.push(call), { output: `ran ${call.input}`, truncated: false }),
    persist: async (step: RecordedStep) => void persisted.push(step),
    userCommand: 'ls -la',
  };
}

describe('the agent loop with a user command', () => {
  it('records the shell call before it runs, runs it once, and stores call and output without the model', async () => {
    const executed: ToolCall[] = [];
    const persisted: RecordedStep[] = [];
    const result = await runAgentLoop(options(executed, persisted));
    assert.equal(executed.length, 1);
    assert.equal(executed[0]!.name, 'shell');
    assert.deepEqual(JSON.parse(executed[0]!.input), { command: 'ls -la' });
    assert.deepEqual(result.items.map((item) => item.type), ['function_call', 'function_call_output']);
    assert.deepEqual(persisted.map((step) => step.items.map((item) => item.type)), [['function_call'], ['function_call_output']]);
    assert.equal(result.usage, null);
    assert.equal(result.completion.status, 'completed');
  });

  it('resumed from its recorded call, it answers that call only; with its output recorded, it runs nothing', async () => {
    const first: RecordedStep[] = [];
    await runAgentLoop(options([], first));
    const executed: ToolCall[] = [];
    const resumed = await runAgentLoop({ ...options(executed, []), resumeFrom: first.slice(0, 1) });
    assert.deepEqual(executed.map((call) => call.callId), [first[0]!.items[0]!.call_id]);
    assert.equal(resumed.items.length, 2);
    const none: ToolCall[] = [];
    await runAgentLoop({ ...options(none, []), resumeFrom: first });
    assert.equal(none.length, 0);
  });

  it('the stored text marks a command; a prompt typed as !ls stays a prompt', () => {
    assert.equal(userCommandOf(userCommandText('ls')), 'ls');
    assert.equal(userCommandOf({ input: '!ls', userText: '!ls' }), null);
  });
});
