/**
 * Every wire dialect through the real server against the loopback fake provider: a tool round trip
 * with reasoning, streamed as SSE and stored as canonical history, and rate-limit retries that
 * honour each provider's own reset headers.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { waitForTurn, type TestServer } from '../support/server.ts';
import { fakeEncryptedReasoning, fakeThinkingSignature, type FakeProvider } from '../support/fake-provider.ts';
import { useFakeServerWithNotes } from './dialects-support.ts';
import { EventRecorder } from '../support/events.ts';
import { readHistoryRange } from '../../src/store/history.ts';

interface ToolOutput {
  callId: string;
  text: string;
}

/** What differs between dialects: the model, the path the fake sees, and the shapes of a request. */
const DIALECTS = [
  {
    model: 'fake-responses',
    path: '/v1/responses',
    toolOutputs: (body: any): ToolOutput[] =>
      body.input.filter((item: any) => item.type === 'function_call_output').map((item: any) => ({ callId: item.call_id, text: String(item.output) })),
    /** the reasoning of the first step, as the second request carries it back */
    replayedReasoning: (body: any) => body.input.find((item: any) => item.type === 'reasoning')?.encrypted_content,
    expectedReasoning: (replyId: string) => fakeEncryptedReasoning(`rs_${replyId}_0`),
  },
  {
    model: 'fake-anthropic',
    path: '/v1/messages',
    toolOutputs: (body: any): ToolOutput[] =>
      body.messages
        .flatMap((message: any) => (Array.isArray(message.content) ? message.content : []))
        .filter((block: any) => block.type === 'tool_result')
        .map((block: any) => ({ callId: block.tool_use_id, text: typeof block.content === 'string' ? block.content : block.content.map((part: any) => part.text).join('') })),
    replayedReasoning: (body: any) =>
      body.messages.flatMap((message: any) => (Array.isArray(message.content) ? message.content : [])).find((block: any) => block.type === 'thinking')?.signature,
    expectedReasoning: (replyId: string) => fakeThinkingSignature(`${replyId}_0`),
  },
  {
    model: 'fake-chat',
    path: '/v1/chat/completions',
    toolOutputs: (body: any): ToolOutput[] =>
      body.messages.filter((message: any) => message.role === 'tool').map((message: any) => ({ callId: message.tool_call_id, text: message.content })),
    // Chat Completions has no way to carry reasoning back: it stays in history only.
    replayedReasoning: (body: any) => body.messages.find((message: any) => 'reasoning_content' in message)?.reasoning_content,
    expectedReasoning: () => undefined,
  },
] as const;

describe('every dialect through the real server', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServerWithNotes();
  before(() => ({ fake, server } = harness));

  /** An SSE subscriber from the start of the log, closed even when an assertion fails. */
  async function recording(run: (events: EventRecorder) => Promise<void>): Promise<void> {
    const events = new EventRecorder(server.url, { lastEventId: 0 });
    try {
      await events.opened;
      await run(events);
    } finally {
      events.close();
    }
  }

  const newSession = async (model: string, effort = 'none') => {
    const response = await server.request('POST', '/v1/sessions', { body: { model, effort } });
    assert.equal(response.status, 201, response.text);
    return response.json;
  };

  for (const dialect of DIALECTS) {
    it(`${dialect.model}: a tool round trip with reasoning streams, replays and stores canonical history`, () => recording(async (events) => {
      const session = await newSession(dialect.model, 'high');
      const callId = `call_${dialect.model.replace('-', '_')}`;
      fake.enqueue(
        { kind: 'reply', id: `${dialect.model}-step1`, reasoning: 'I should read the notes.', text: 'Reading the notes. ', toolCalls: [{ name: 'read_file', arguments: '{"path":"notes.txt"}', callId }] },
        { kind: 'reply', text: 'It says 42.' },
      );
      const before = fake.requests.length;
      const turn = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'What do the notes say?' } });
      assert.equal(turn.status, 202, turn.text);
      const finished = await events.waitForType('turn.completed', turn.json.id);
      assert.equal(finished.data.data.error, null);

      const [first, second] = fake.requests.slice(before);
      assert.equal(fake.requests.length, before + 2);
      for (const request of [first, second]) {
        assert.equal(request.path, dialect.path);
        assert.equal(request.body.model, `fake-${dialect.path === '/v1/responses' ? 'openai-responses' : dialect.path === '/v1/messages' ? 'anthropic-messages' : 'openai-chat'}-model`);
      }
      assert.deepEqual(dialect.toolOutputs(first.body), []);
      const [output] = dialect.toolOutputs(second.body);
      assert.equal(output.callId, callId);
      assert.match(output.text, /the answer is 42/);
      assert.equal(dialect.replayedReasoning(second.body), dialect.expectedReasoning(`${dialect.model}-step1`));

      const ofTurn = events.ofTurn(turn.json.id);
      const dataOf = (type: string) => ofTurn.filter((event) => event.type === type).map((event) => event.data.data);
      assert.deepEqual(
        dataOf('tool.started').map((data) => [data.callId, data.name, data.kind]),
        [[callId, 'read_file', 'function']],
      );
      assert.equal(JSON.parse(dataOf('tool.arguments.updated').at(-1)!.arguments).path, 'notes.txt');
      const toolFinished = dataOf('tool.finished')[0];
      assert.equal(toolFinished.callId, callId);
      assert.match(toolFinished.output, /the answer is 42/);
      assert.equal(dataOf('response.text.delta').map((data) => data.text).join(''), 'Reading the notes. It says 42.');
      assert.equal(dataOf('response.reasoning.delta').map((data) => data.text).join(''), 'I should read the notes.');
      assert.deepEqual(Object.keys(dataOf('agent.turn.finished')[0].usage).sort(), ['cachedTokens', 'inputTokens', 'outputTokens']);

      const result = (await server.request('GET', `/v1/turns/${turn.json.id}/result`)).json;
      assert.equal(result.turn.status, 'completed');
      assert.equal(result.output.assistantText, 'It says 42.');
      assert.equal(result.output.completion.status, 'completed');

      const [stored] = await readHistoryRange(server.server.store.db, session.id, 0, 10);
      const types = stored.items.map((item) => item.type);
      assert.deepEqual(types, ['message', 'reasoning', 'message', 'function_call', 'function_call_output', 'message']);
      const call = stored.items.find((item) => item.type === 'function_call')!;
      assert.equal(call.call_id, callId);
      assert.equal(call.name, 'read_file');
      assert.deepEqual(JSON.parse(call.arguments as string), { path: 'notes.txt' });
      const toolOutput = stored.items.find((item) => item.type === 'function_call_output')!;
      assert.equal(toolOutput.call_id, callId);
      assert.match(String(toolOutput.output), /the answer is 42/);
      assert.deepEqual((stored.items.at(-1)!.content as any[]).map((part) => part.text), ['It says 42.']);
      assert.equal(stored.assistantText, 'It says 42.');
    }));
  }

  it('fake-responses: a 429 waits for the OpenAI reset header before the retry', async () => {
    const headers = { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '150ms', 'x-ratelimit-remaining-tokens': '9000', 'x-ratelimit-reset-tokens': '20ms' };
    await assertRetried('fake-responses', [{ status: 429, headers: () => headers, expectedDelayMs: 150 }]);
  });

  it('fake-chat: a router\'s upstream 429 is retried after its retry-after', async () => {
    const body = { error: { code: 429, message: 'Provider returned error', metadata: { provider_name: 'Upstream', raw: 'temporarily rate-limited upstream' } } };
    await assertRetried('fake-chat', [{ status: 429, headers: () => ({ 'retry-after': '0.1' }), body, expectedDelayMs: 100 }]);
  });

  it('fake-anthropic: a 429 waits for the anthropic-ratelimit reset time, a 529 overload for retry-after', async () => {
    const limited = { type: 'error', error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' }, request_id: 'req_fake_429' };
    const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_fake_529' };
    const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
    await assertRetried('fake-anthropic', [
      {
        status: 429,
        // the exhausted limit decides, not the sooner reset of one that still has room
        headers: () => ({ 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': inMs(400), 'anthropic-ratelimit-tokens-remaining': '5000', 'anthropic-ratelimit-tokens-reset': inMs(50) }),
        body: limited,
        expectedDelayMs: 400,
        toleranceMs: 150,
      },
      { status: 529, headers: () => ({ 'retry-after': '0.2' }), body: overloaded, expectedDelayMs: 200 },
    ]);
  });

  interface ScriptedFailure {
    status: number;
    /** built when the failure is scripted, so reset times are relative to then */
    headers: () => Record<string, string>;
    body?: unknown;
    expectedDelayMs: number;
    toleranceMs?: number;
  }

  /** Fails the first attempts as scripted, then answers; checks the waits, the events and history. */
  function assertRetried(model: string, failures: ScriptedFailure[]): Promise<void> {
    return recording(async (events) => {
      const session = await newSession(model);
      const before = fake.requests.length;
      const errors = failures.map((failure) => ({ kind: 'http-error' as const, status: failure.status, headers: failure.headers(), body: failure.body }));
      fake.enqueue(...errors, { kind: 'reply', text: 'after the wait' });
      const turn = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'go' } });
      const done = await waitForTurn(server, turn.json.id);
      assert.equal(done.status, 'completed', done.error);
      assert.equal(fake.requests.length - before, failures.length + 1, 'one request per attempt');
      await events.waitForType('turn.completed', turn.json.id);

      const ofTurn = events.ofTurn(turn.json.id);
      const attempts = ofTurn.filter((event) => event.type === 'response.attempt.failed').map((event) => event.data.data);
      assert.equal(attempts.length, failures.length);
      failures.forEach((failure, index) => {
        assert.equal(attempts[index].attempt, index + 1);
        assert.equal(attempts[index].status, failure.status);
        assert.equal(attempts[index].displayOnly, true);
        const off = Math.abs(attempts[index].retryInMs - failure.expectedDelayMs);
        assert.ok(off <= (failure.toleranceMs ?? 0), `waited ${attempts[index].retryInMs} ms, expected ${failure.expectedDelayMs}`);
      });
      const limits = ofTurn.filter((event) => event.type === 'provider.limit').map((event) => event.data.data.text);
      assert.equal(limits.length, failures.length);
      failures.forEach((failure, index) => assert.match(limits[index], new RegExp(`fake-\\w+ is rate limiting \\(HTTP ${failure.status}\\)`)));

      const waited = Date.parse(done.finishedAt) - Date.parse(done.startedAt);
      const minimum = failures.reduce((sum, failure) => sum + failure.expectedDelayMs - (failure.toleranceMs ?? 0), 0);
      assert.ok(waited >= minimum - 5, `the turn took ${waited} ms, less than the ${minimum} ms the provider asked for`);
      const [stored] = await readHistoryRange(server.server.store.db, session.id, 0, 10);
      assert.deepEqual(stored.items.map((item) => item.type), ['message', 'message']);
      assert.equal(stored.assistantText, 'after the wait');
    });
  }
});
