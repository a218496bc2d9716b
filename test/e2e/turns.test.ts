import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { startTestServer, fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { EventRecorder } from '../support/events.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';
import { MAX_AGENT_STEPS } from '../../src/runtime/turn/turn-execution.ts';
import { findTurn } from '../../src/store/turns.ts';
import { DEFAULT_BOUNDARY_ID } from '../../src/runtime/boundary.ts';

for (const backend of BACKENDS) {
  describe(`turns on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const started = useServerOnFakeProvider({ backend });
    before(() => ({ fake, server } = started));

    const newSession = async () => (await server.request('POST', '/v1/sessions', { body: {} })).json;
    const submit = (sessionId: string, body: unknown) => server.request('POST', `/v1/sessions/${sessionId}/turns`, { body });

    it('streams a turn with a tool round trip and stores its result durably', async () => {
      const events = new EventRecorder(server.url, { lastEventId: 0 });
      await events.opened;
      const session = await newSession();
      fake.enqueue(
        { kind: 'reply', text: 'Let me look. ', toolCalls: [{ name: 'list_dir', arguments: '{}', callId: 'call_look' }], usage: { input: 100, output: 20, cached: 40 } },
        { kind: 'reply', text: 'The directory is empty.', usage: { input: 150, output: 10, cached: 100 } },
      );
      const before = fake.requests.length;
      const response = await submit(session.id, { input: 'What is here?' });
      assert.equal(response.status, 202);
      const turnId = response.json.id;
      assert.equal(response.json.clientRequestId, turnId);
      await events.waitForType('turn.completed', turnId);
      const types = events.ofTurn(turnId).map((event) => event.type);
      for (const expected of ['turn.queued', 'turn.started', 'agent.turn.started', 'response.text.delta', 'tool.started', 'tool.updated', 'tool.finished', 'agent.turn.finished', 'turn.completed']) {
        assert.ok(types.includes(expected), `${expected} in ${types.join(',')}`);
      }
      assert.ok(types.indexOf('turn.queued') < types.indexOf('turn.started'));
      assert.ok(types.indexOf('tool.finished') < types.indexOf('turn.completed'));
      const ids = events.ofTurn(turnId).map((event) => Number(event.id));
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
      const envelope = events.ofTurn(turnId)[0].data;
      assert.deepEqual(Object.keys(envelope).sort(), ['at', 'data', 'id', 'sessionId', 'turnId', 'type']);
      assert.equal(envelope.sessionId, session.id);
      const toolFinished = events.ofTurn(turnId).find((event) => event.type === 'tool.finished')!.data.data;
      assert.equal(toolFinished.callId, 'call_look');
      assert.equal(toolFinished.kind, 'function');
      assert.equal(typeof toolFinished.output, 'string');
      events.close();

      // the second model request carried the tool output back, as canonical items
      const second = fake.requests[before + 1].body;
      const output = second.input.find((item: any) => item.type === 'function_call_output');
      assert.equal(output.call_id, 'call_look');
      assert.equal(second.store, false);

      const result = await server.request('GET', `/v1/turns/${turnId}/result`);
      assert.equal(result.status, 200);
      assert.equal(result.json.turn.status, 'completed');
      assert.equal(result.json.output.assistantText, 'The directory is empty.');
      assert.equal(result.json.output.completion.status, 'completed');
      const updated = (await server.request('GET', `/v1/sessions/${session.id}`)).json;
      assert.deepEqual(updated.usage, { input: 250, output: 30, cached: 140 });
      assert.equal(updated.title, 'What is here?');
      assert.ok(updated.updatedAt > session.updatedAt);

      // the next turn replays the durable context: user, call, output, answer, then the new message
      fake.enqueue({ kind: 'reply', text: 'ok' });
      const next = await submit(session.id, { input: 'thanks' });
      await waitForTurn(server, next.json.id);
      const replayed = fake.requests[fake.requests.length - 1].body.input;
      assert.deepEqual(replayed.map((item: any) => item.type), ['message', 'message', 'function_call', 'function_call_output', 'message', 'message']);
      assert.equal(replayed[0].content[0].text, 'What is here?');
      assert.equal(replayed[5].content[0].text, 'thanks');
    });

    it('is idempotent per clientRequestId, and refuses the same id with another input', async () => {
      const session = await newSession();
      const clientRequestId = '0b7c4e1a-5d2f-4c3b-9a8e-7f6d5c4b3a21';
      fake.enqueue({ kind: 'reply', text: 'once' });
      const first = await submit(session.id, { input: 'do it', clientRequestId });
      const again = await submit(session.id, { input: 'do it', clientRequestId: clientRequestId.toUpperCase() });
      assert.equal(again.status, 202);
      assert.equal(again.json.id, first.json.id);
      await waitForTurn(server, first.json.id);
      const after = await submit(session.id, { input: 'do it', clientRequestId });
      assert.equal(after.json.id, first.json.id);
      assert.equal(after.json.status, 'completed');
      const conflict = await submit(session.id, { input: 'do something else', clientRequestId });
      assert.equal(conflict.status, 409);
      assert.equal(conflict.json.error.code, 'idempotency_conflict');
      const list = await server.request('GET', `/v1/turns?sessionId=${session.id}`);
      assert.equal(list.json.data.length, 1);
    });

    it('refuses blank input and a second active turn; rejects mutations of a busy session', async () => {
      const session = await newSession();
      const blank = await submit(session.id, { input: '  \n' });
      assert.equal(blank.status, 422);
      assert.equal(blank.json.error.code, 'empty_input');
      fake.enqueue({ kind: 'hang' });
      const sent = fake.requests.length;
      const running = await submit(session.id, { input: 'wait forever' });
      // the hang must be in flight: a turn cancelled before its request would leave it queued
      await fake.waitForRequests(sent + 1);
      const second = await submit(session.id, { input: 'me too' });
      assert.equal(second.status, 409);
      assert.equal(second.json.error.code, 'session_busy');
      for (const [method, path, body] of [['PATCH', `/v1/sessions/${session.id}`, { title: 'x' }], ['DELETE', `/v1/sessions/${session.id}`, undefined]] as const) {
        const response = await server.request(method, path, body ? { body } : {});
        assert.equal(response.status, 409, method);
        assert.equal(response.json.error.code, 'session_busy');
      }
      const notYet = await server.request('GET', `/v1/turns/${running.json.id}/result`);
      assert.equal(notYet.status, 409);
      assert.equal(notYet.json.error.code, 'turn_not_terminal');
      assert.equal(notYet.json.error.details.id, running.json.id);
      const cancelled = await server.request('POST', `/v1/turns/${running.json.id}/cancel`);
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.json.status, 'cancelled');
      assert.ok(cancelled.json.finishedAt);
      const unchanged = await server.request('POST', `/v1/turns/${running.json.id}/cancel`);
      assert.deepEqual(unchanged.json, cancelled.json);
      const result = await server.request('GET', `/v1/turns/${running.json.id}/result`);
      assert.equal(result.json.output, null);
      assert.equal((await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'free again' } })).status, 200);
    });

    it('validates attachments at their limits', async () => {
      const session = await newSession();
      const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
      const twoImages = await submit(session.id, { input: 'x', images: [{ mimeType: 'image/png', data: png }, { mimeType: 'image/png', data: png }] });
      assert.equal(twoImages.json.error.code, 'invalid_attachment');
      const file = { name: 'a.txt', mimeType: 'text/plain', data: Buffer.from('hi').toString('base64') };
      const six = await submit(session.id, { input: 'x', images: [{ mimeType: 'image/png', data: png }], files: [file, file, file, file, file] });
      assert.equal(six.json.error.code, 'invalid_attachment');
      const badBase64 = await submit(session.id, { input: 'x', files: [{ ...file, data: '***' }] });
      assert.equal(badBase64.json.error.code, 'invalid_attachment');
      const traversal = await submit(session.id, { input: 'x', files: [{ ...file, name: '../evil' }] });
      assert.equal(traversal.json.error.code, 'invalid_attachment');
      const badMime = await submit(session.id, { input: 'x', images: [{ mimeType: 'image/svg+xml', data: png }] });
      assert.equal(badMime.status, 400);
      fake.enqueue({ kind: 'reply', text: 'seen' });
      const imageOnly = await submit(session.id, { input: '', images: [{ mimeType: 'image/png', data: png }], files: [file, file, file, file] });
      assert.equal(imageOnly.status, 202);
      await waitForTurn(server, imageOnly.json.id);
      const sent = fake.requests[fake.requests.length - 1].body.input.at(-1);
      assert.equal(sent.content.find((part: any) => part.type === 'input_image').image_url, `data:image/png;base64,${png}`);
      assert.match(sent.content[0].text, /attached file a\.txt/);
    });

    it('retries a rate limit honouring retry-after, with display-only events', async () => {
      const events = new EventRecorder(server.url, { lastEventId: 0 });
      await events.opened;
      const session = await newSession();
      fake.enqueue({ kind: 'http-error', status: 429, headers: { 'retry-after-ms': '30' }, body: { error: { message: 'slow down', type: 'rate_limit_exceeded', code: 'rate_limit_exceeded' } } }, { kind: 'reply', text: 'after the wait' });
      const turn = await submit(session.id, { input: 'go' });
      const done = await waitForTurn(server, turn.json.id);
      assert.equal(done.status, 'completed');
      await events.waitForType('turn.completed', turn.json.id);
      const types = events.ofTurn(turn.json.id).map((event) => event.type);
      assert.ok(types.includes('provider.limit'));
      assert.ok(types.includes('response.attempt.failed'));
      assert.ok(types.includes('response.restarted'));
      const restarted = events.ofTurn(turn.json.id).find((event) => event.type === 'response.restarted')!;
      assert.equal(restarted.data.data.displayOnly, true);
      events.close();
    });

    it('fails a turn once retries are exhausted, naming the provider and status', async () => {
      const session = await newSession();
      const overloaded = { kind: 'http-error' as const, status: 503, headers: { 'retry-after-ms': '1' }, body: { error: { message: 'overloaded', type: 'server_error' } } };
      fake.enqueue(overloaded, overloaded, overloaded, overloaded);
      const turn = await submit(session.id, { input: 'go' });
      const done = await waitForTurn(server, turn.json.id);
      assert.equal(done.status, 'failed');
      assert.match(done.error, /^provider_error: .*503/);
      assert.equal(fake.pendingSteps(), 0, 'four attempts were made');
    });

    it('fails a turn on a non-retryable provider error, keeping partial output out of items', async () => {
      const session = await newSession();
      fake.enqueue({ kind: 'mid-stream-error', afterText: 'half an ans', code: 'invalid_prompt', message: 'bad prompt' } as never);
      const turn = await submit(session.id, { input: 'go' });
      assert.equal(turn.status, 202, turn.text);
      const done = await waitForTurn(server, turn.json.id);
      assert.equal(done.status, 'failed');
      assert.match(done.error, /provider_error/);
      fake.enqueue({ kind: 'reply', text: 'fresh' });
      const next = await submit(session.id, { input: 'again' });
      await waitForTurn(server, next.json.id);
      const input = fake.requests[fake.requests.length - 1].body.input;
      assert.ok(!JSON.stringify(input).includes('half an ans'), 'failed partial output never reaches a model');
      assert.ok(!JSON.stringify(input).includes('"go"'), 'a failed turn adds nothing to the model context');
    });

    it('counts the usage of steps that completed before a turn failed', async () => {
      const session = await newSession();
      fake.enqueue(
        { kind: 'reply', toolCalls: [{ name: 'list_dir', arguments: '{}' }], usage: { input: 70, output: 7, cached: 0 } },
        { kind: 'mid-stream-error', code: 'invalid_prompt', message: 'bad prompt' } as never,
      );
      const turn = await submit(session.id, { input: 'go' });
      const done = await waitForTurn(server, turn.json.id);
      assert.equal(done.status, 'failed');
      const updated = (await server.request('GET', `/v1/sessions/${session.id}`)).json;
      assert.deepEqual(updated.usage, { input: 70, output: 7, cached: 0 });
      const rows = await readHistoryRange(server.server.store.db, session.id, 0, 10);
      assert.deepEqual(rows[0].usage, { input: 70, output: 7, cached: 0 });
      assert.deepEqual(rows[0].items, []);
    });

    it('cancels a queued turn and a running turn, aborting the provider request', async () => {
      const session = await newSession();
      fake.enqueue({ kind: 'hang', afterText: 'thinking…' });
      const sent = fake.requests.length;
      const running = await submit(session.id, { input: 'long' });
      await fake.waitForRequests(sent + 1);
      assert.equal((await server.request('GET', `/v1/turns/${running.json.id}`)).json.status, 'running');
      const cancelled = await server.request('POST', `/v1/turns/${running.json.id}/cancel`);
      assert.equal(cancelled.json.status, 'cancelled');
      assert.equal(cancelled.json.error, 'cancelled');
    });

    it('answers a running turn from memory while its row stays queued, and stores startedAt with the terminal state', async () => {
      const session = await newSession();
      fake.enqueue({ kind: 'hang', afterText: 'thinking…' });
      const sent = fake.requests.length;
      const running = (await submit(session.id, { input: 'long' })).json;
      await fake.waitForRequests(sent + 1);
      const live = (await server.request('GET', `/v1/turns/${running.id}`)).json;
      assert.equal(live.status, 'running');
      assert.ok(live.startedAt);
      const listed = (await server.request('GET', `/v1/turns?sessionId=${session.id}`)).json.data;
      assert.deepEqual(listed.map((turn: any) => turn.status), ['running']);
      // the start is not a write of its own: only the queued admission and the terminal state are
      assert.equal((await findTurn(server.server.store.db, DEFAULT_BOUNDARY_ID, running.id))!.status, 'queued');
      await server.request('POST', `/v1/turns/${running.id}/cancel`);
      const stored = (await findTurn(server.server.store.db, DEFAULT_BOUNDARY_ID, running.id))!;
      assert.equal(stored.status, 'cancelled');
      assert.equal(stored.startedAt, live.startedAt);
    });

    it('stops a model that keeps calling tools at the step limit, as an incomplete completion', async () => {
      const session = await newSession();
      const looping = Array.from({ length: MAX_AGENT_STEPS }, (_, index) => ({ kind: 'reply' as const, toolCalls: [{ name: 'list_dir', arguments: '{}', callId: `call_loop_${index}` }] }));
      fake.enqueue(...looping);
      const before = fake.requests.length;
      const turn = await submit(session.id, { input: 'loop forever' });
      const done = await waitForTurn(server, turn.json.id, 60_000);
      assert.equal(done.status, 'completed');
      assert.equal(fake.requests.length - before, MAX_AGENT_STEPS, 'exactly the step limit of model requests (one more would get a plain answer)');
      const result = await server.request('GET', `/v1/turns/${turn.json.id}/result`);
      assert.deepEqual(result.json.output.completion, { status: 'incomplete', reason: 'step_limit', reasoningTokens: 0 });
    });

    it('answers 404 for unknown turns', async () => {
      for (const path of ['/v1/turns/nope', '/v1/turns/00000000-0000-7000-8000-000000000000/result', '/v1/turns/00000000-0000-7000-8000-000000000000/cancel']) {
        const response = await server.request(path.endsWith('cancel') ? 'POST' : 'GET', path);
        assert.equal(response.status, 404);
        assert.equal(response.json.error.code, 'turn_not_found');
      }
      assert.equal((await server.request('POST', '/v1/sessions/00000000-0000-7000-8000-000000000000/turns', { body: { input: 'x' } })).json.error.code, 'session_not_found');
    });
  });
}

describe('the scheduler through the server', () => {
  let fake: FakeProvider;
  let server: TestServer;
  before(async () => {
    fake = await startFakeProvider();
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), args: ['--max-concurrent-turns', '1', '--max-queued-turns', '1', '--max-queued-turns-per-tenant', '1', '--max-concurrent-turns-per-tenant', '1'] });
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('queues at the running limit, records a failed turn past the queue limit, and cancels a queued turn', async () => {
    const sessions = await Promise.all([0, 1, 2].map(async () => (await server.request('POST', '/v1/sessions', { body: {} })).json));
    fake.enqueue({ kind: 'hang' });
    const sent = fake.requests.length;
    const running = await server.request('POST', `/v1/sessions/${sessions[0].id}/turns`, { body: { input: 'one' } });
    await fake.waitForRequests(sent + 1);
    const queued = await server.request('POST', `/v1/sessions/${sessions[1].id}/turns`, { body: { input: 'two' } });
    assert.equal(queued.json.status, 'queued');
    const refused = await server.request('POST', `/v1/sessions/${sessions[2].id}/turns`, { body: { input: 'three' } });
    assert.equal(refused.status, 202);
    assert.equal(refused.json.status, 'failed');
    assert.match(refused.json.error, /^turn_queue_full/);
    assert.equal((await server.request('PATCH', `/v1/sessions/${sessions[2].id}`, { body: { title: 'not busy' } })).status, 200);

    const cancelledQueued = await server.request('POST', `/v1/turns/${queued.json.id}/cancel`);
    assert.equal(cancelledQueued.json.status, 'cancelled');
    assert.equal(cancelledQueued.json.startedAt, null);
    fake.enqueue({ kind: 'reply', text: 'second in line' });
    const next = await server.request('POST', `/v1/sessions/${sessions[1].id}/turns`, { body: { input: 'two again' } });
    assert.equal(next.json.status, 'queued');
    await server.request('POST', `/v1/turns/${running.json.id}/cancel`);
    const finished = await waitForTurn(server, next.json.id);
    assert.equal(finished.status, 'completed');
  });
});
