/**
 * One canonical history, continued in another dialect. A session's dialect is fixed by its model,
 * and fork keeps the model, so the history rows are copied with the store into a session on the
 * other dialect; its next turn must send the converted context: the same tool call ids, arguments,
 * outputs and text, with reasoning dropped where that dialect cannot read it.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { useFakeServerWithNotes } from './dialects-support.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import { fakeEncryptedReasoning, fakeThinkingSignature, type FakeProvider, type FakeStep } from '../support/fake-provider.ts';
import { insertHistoryEntry, readHistoryRange } from '../../src/store/history.ts';

const QUESTION = 'What do the notes say?';
const THINKING = 'The notes file should hold the answer.';
const FOLLOW_UP = 'And what was the question?';

describe('a history written by one dialect, continued by another', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServerWithNotes();
  before(() => ({ fake, server } = harness));

  const db = () => server.server.store.db;

  async function newSession(model: string, effort: string): Promise<string> {
    const response = await server.request('POST', '/v1/sessions', { body: { model, effort } });
    assert.equal(response.status, 201, response.text);
    return response.json.id;
  }

  /** Runs a turn to completion and returns the bodies of the model requests it made. */
  async function runTurn(sessionId: string, input: string, steps: FakeStep[]): Promise<any[]> {
    const before = fake.requests.length;
    fake.enqueue(...steps);
    const turn = await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } });
    const done = await waitForTurn(server, turn.json.id);
    assert.equal(done.status, 'completed', done.error);
    return fake.requests.slice(before).map((request) => request.body);
  }

  /** A tool round trip with reasoning, in whatever dialect the session speaks; returns its id. */
  async function historyWithToolCall(model: string, callId: string, replyId: string): Promise<string> {
    const sessionId = await newSession(model, 'high');
    await runTurn(sessionId, QUESTION, [
      { kind: 'reply', id: replyId, reasoning: THINKING, text: 'Reading the notes.', toolCalls: [{ name: 'read_file', arguments: '{"path":"notes.txt"}', callId }] },
      { kind: 'reply', text: 'They say 42.' },
    ]);
    return sessionId;
  }

  /** The store copy that stands in for "fork with another model". */
  async function continueIn(model: string, effort: string, fromSessionId: string): Promise<string> {
    const sessionId = await newSession(model, effort);
    for (const turn of await readHistoryRange(db(), fromSessionId, 0, 100)) await insertHistoryEntry(db(), sessionId, turn);
    return sessionId;
  }

  describe('from Anthropic Messages, with signed thinking', () => {
    const callId = 'toolu_01CrossDialect';
    const signature = fakeThinkingSignature('anthropic-origin_0');
    let origin: string;
    before(async () => {
      origin = await historyWithToolCall('fake-anthropic', callId, 'anthropic-origin');
    });

    it('keeps the thinking in canonical history, marked as Anthropic-only', async () => {
      const [turn] = await readHistoryRange(db(), origin, 0, 10);
      const reasoning = turn.items.find((item) => item.type === 'reasoning')!;
      assert.equal(reasoning.provider, 'anthropic');
      assert.equal(reasoning.encrypted_content, signature);
      assert.deepEqual(turn.items.map((item) => item.type), ['message', 'reasoning', 'message', 'function_call', 'function_call_output', 'message']);
    });

    it('continues on Chat Completions with the same call, output and text, without the thinking', async () => {
      const sessionId = await continueIn('fake-chat', 'none', origin);
      const [body] = await runTurn(sessionId, FOLLOW_UP, [{ kind: 'reply', text: 'It was about the notes.' }]);
      const messages = body.messages;
      assert.deepEqual(messages.map((message: any) => message.role), ['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
      assert.equal(messages[1].content, QUESTION);
      assert.equal(messages[2].content, 'Reading the notes.');
      assert.deepEqual(messages[2].tool_calls, [{ id: callId, type: 'function', function: { name: 'read_file', arguments: '{"path":"notes.txt"}' } }]);
      assert.equal(messages[3].tool_call_id, callId);
      assert.match(messages[3].content, /the answer is 42/);
      assert.equal(messages[4].content, 'They say 42.');
      assert.equal(messages[5].content, FOLLOW_UP);
      assertAbsent(body, [THINKING, signature]);

      const turns = await readHistoryRange(db(), sessionId, 0, 10);
      assert.equal(turns.length, 2);
      assert.equal(turns[1].assistantText, 'It was about the notes.');
    });

    it('continues on OpenAI Responses with the same items, the thinking filtered out', async () => {
      const sessionId = await continueIn('fake-responses', 'high', origin);
      const [body] = await runTurn(sessionId, FOLLOW_UP, [{ kind: 'reply', text: 'It was about the notes.' }]);
      const input = body.input;
      assert.deepEqual(input.map((item: any) => item.type), ['message', 'message', 'function_call', 'function_call_output', 'message', 'message']);
      assert.equal(input[0].content[0].text, QUESTION);
      assert.equal(input[1].content[0].text, 'Reading the notes.');
      assert.equal(input[2].call_id, callId);
      assert.equal(input[2].name, 'read_file');
      assert.deepEqual(JSON.parse(input[2].arguments), { path: 'notes.txt' });
      assert.equal(input[3].call_id, callId);
      assert.match(String(input[3].output), /the answer is 42/);
      assert.equal(input[4].content[0].text, 'They say 42.');
      assert.equal(input[5].content[0].text, FOLLOW_UP);
      assertAbsent(body, [THINKING, signature]);
    });
  });

  describe('from OpenAI Responses, with encrypted reasoning and a call id Anthropic cannot take', () => {
    // Some models name calls like this; Anthropic accepts only [a-zA-Z0-9_-] in tool ids.
    const callId = 'functions.read_file:0';
    const encrypted = fakeEncryptedReasoning('rs_responses-origin_0');
    let origin: string;
    before(async () => {
      origin = await historyWithToolCall('fake-responses', callId, 'responses-origin');
      const [turn] = await readHistoryRange(db(), origin, 0, 10);
      assert.equal(turn.items.find((item) => item.type === 'reasoning')!.encrypted_content, encrypted);
    });

    it('continues on Anthropic Messages with matching tool_use and tool_result ids, thinking on, old reasoning dropped', async () => {
      const sessionId = await continueIn('fake-anthropic', 'high', origin);
      const [body] = await runTurn(sessionId, FOLLOW_UP, [{ kind: 'reply', reasoning: 'Recalling.', text: 'It was about the notes.' }]);
      const blocks = (index: number) => body.messages[index].content.map((block: any) => block.type);
      assert.deepEqual(body.messages.map((message: any) => message.role), ['user', 'assistant', 'user', 'assistant', 'user']);
      assert.deepEqual(blocks(1), ['text', 'tool_use']);
      const toolUse = body.messages[1].content[1];
      assert.equal(toolUse.id, 'functions_read_file_0');
      assert.equal(toolUse.name, 'read_file');
      assert.deepEqual(toolUse.input, { path: 'notes.txt' });
      const toolResult = body.messages[2].content[0];
      assert.equal(toolResult.type, 'tool_result');
      assert.equal(toolResult.tool_use_id, toolUse.id);
      assert.match(typeof toolResult.content === 'string' ? toolResult.content : JSON.stringify(toolResult.content), /the answer is 42/);
      assert.equal(body.messages[3].content[0].text, 'They say 42.');
      assert.equal(body.messages.at(-1).content.at(-1).text, FOLLOW_UP);
      assert.equal(body.thinking?.type, 'enabled');
      assertAbsent(body, [THINKING, encrypted]);

      // the new turn's own thinking is kept for the next Anthropic step, the old reasoning is not
      const [, turn] = await readHistoryRange(db(), sessionId, 0, 10);
      assert.equal(turn.items.find((item) => item.type === 'reasoning')?.provider, 'anthropic');
    });
  });

  function assertAbsent(body: unknown, texts: string[]): void {
    const wire = JSON.stringify(body);
    for (const text of texts) assert.ok(!wire.includes(text), `${text} was sent to a dialect that cannot read it`);
  }
});
