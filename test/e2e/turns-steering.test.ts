/**
 * Steering (CONTRACT.md §19) through the real server and the fake providers: CreateTurn with
 * `steer: true` joins the session's active turn, and the model gets the input in the turn's next
 * request, asserted in the request bodies the fake provider received, in each dialect. Raced
 * against the turn's end (during its last model step, during a tool, while it waits for a human,
 * just after its terminal write), the input is shown to the model exactly once, or becomes a turn
 * of its own.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { BACKENDS } from '../support/backends.ts';
import { waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeRequest } from '../support/fake-provider.ts';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';
import { DENIED_OUTPUT } from '../../src/agent/policy/authorize.ts';
import { createClient, type Turn } from '../../src/client/index.ts';

const MODEL_OF = { 'openai-responses': 'fake-responses', 'anthropic-messages': 'fake-anthropic', 'openai-chat': 'fake-chat' } as const;
const DIALECTS = Object.keys(MODEL_OF) as (keyof typeof MODEL_OF)[];
const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

/** How many times `text` is in the request body (its JSON: every dialect's user text is a JSON string). */
function timesIn(request: FakeRequest, text: string): number {
  return JSON.stringify(request.body).split(text).length - 1;
}

/** The position of `text` in the request body's JSON, to check what follows what. */
function positionIn(request: FakeRequest, text: string): number {
  return JSON.stringify(request.body).indexOf(text);
}

function steerHelpers(harness: FakeServerHarness) {
  const steer = (sessionId: string, input: string, extra: Record<string, unknown> = {}) =>
    harness.server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input, steer: true, ...extra } });
  /** the requests of one conversation: those whose first user message holds its opening words */
  const requestsOf = (fake: FakeProvider, opening: string) => fake.requests.filter((request) => request.dialect && positionIn(request, opening) !== -1);
  return { steer, requestsOf };
}

for (const backend of BACKENDS) {
  describe(`steering a running turn on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, confinement: 'off' });
    before(() => ({ fake, server } = harness));
    const { steer, requestsOf } = steerHelpers(harness);

    for (const dialect of DIALECTS) {
      it(`${dialect}: steered during a tool, the next request carries it after the tool's output; history and displayItems keep it`, async () => {
        const opening = `list the files ${dialect} ${backend}`;
        const steered = `use the v2 API instead (${dialect})`;
        const session = await harness.newSession({ model: MODEL_OF[dialect] });
        // the tool asks first: the turn waits, so the steer surely arrives before the next request
        fake.enqueue({ kind: 'reply', text: 'Looking.', toolCalls: [shellCall(`call_${dialect.replaceAll('-', '_')}`, ['touch', `made-${dialect}.txt`])] }, { kind: 'reply', text: 'Done with v2.' });
        const before = fake.requests.length;
        const turn = await harness.submit(session.id, opening);
        const request = await harness.nthRequestOf(turn.id, 1);

        const answer = await steer(session.id, steered);
        assert.equal(answer.status, 202, answer.text);
        assert.equal(answer.json.delivery, 'steered');
        assert.equal(answer.json.id, turn.id, 'the answer is the active turn');
        assert.equal(answer.json.input, opening, 'the turn keeps its own input');
        assert.equal((await server.request('GET', `/v1/turns/${turn.id}`)).json.status, 'waiting_for_input', 'a steer answers no request');
        const event = await harness.events.waitFor((candidate) => candidate.type === 'turn.steered' && candidate.data.turnId === turn.id);
        assert.deepEqual(event.data.data, { text: steered, truncated: false });
        assert.equal(event.data.sessionId, session.id);

        assert.equal((await harness.resolve(request.id, { decision: 'allow_once' })).status, 200);
        const done = await waitForTurn(server, turn.id);
        assert.equal(done.status, 'completed', done.error);
        const requests = fake.requests.slice(before);
        assert.equal(requests.length, 2);
        assert.ok(requests.every((sent) => sent.dialect === dialect));
        assert.equal(timesIn(requests[0], steered), 0, 'not in the request that was in flight');
        assert.equal(timesIn(requests[1], steered), 1, 'once in the next');
        assert.ok(positionIn(requests[1], steered) > positionIn(requests[1], 'Looking.'), 'after the model\'s own words');
        assert.ok(positionIn(requests[1], steered) > positionIn(requests[1], `call_${dialect.replaceAll('-', '_')}`), 'after the call and its output');

        const [entry] = await readHistoryRange(server.server.store.db, session.id, 0, 1);
        const userMessages = (items: any[]) => items.filter((item) => item.type === 'message' && item.role === 'user').map((item) => item.content[0].text);
        assert.deepEqual(userMessages(entry.items), [opening, steered]);
        assert.equal(entry.userText, opening);
        const page = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json;
        assert.deepEqual(userMessages(page.data[0].turn.displayItems), [opening, steered]);

        // the next turn's context holds it once, as history
        fake.enqueue({ kind: 'reply', text: 'ok' });
        const next = await harness.submit(session.id, 'and then?');
        await waitForTurn(server, next.id);
        assert.equal(timesIn(fake.requests.at(-1)!, steered), 1);
        assert.equal(requestsOf(fake, opening).length, 3);
      });
    }
  });
}

describe('steering: deliveries, idempotency and refusals', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServer({ confinement: 'off', args: ['--max-concurrent-turns', '1'] });
  before(() => ({ fake, server } = harness));
  const { steer, requestsOf } = steerHelpers(harness);

  it('with no active turn the input is an ordinary queued turn; every CreateTurn answer says how it was delivered', async () => {
    const session = await harness.newSession();
    const plain = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'plain' } });
    assert.equal(plain.json.delivery, 'queued');
    await waitForTurn(server, plain.json.id);
    const answer = await steer(session.id, 'nothing runs');
    assert.equal(answer.status, 202);
    assert.equal(answer.json.delivery, 'queued');
    assert.equal(answer.json.input, 'nothing runs');
    assert.notEqual(answer.json.id, plain.json.id);
    assert.equal((await waitForTurn(server, answer.json.id)).status, 'completed');
    assert.equal((await server.request('GET', `/v1/turns/${answer.json.id}`)).json.delivery, undefined, 'GET shows no delivery');
  });

  it('a queued turn takes the steer into its first request; a steer is idempotent by clientRequestId', async () => {
    const blocker = await harness.newSession();
    fake.route('hold the only slot', { kind: 'hang' });
    const holding = await harness.submit(blocker.id, 'hold the only slot');
    await waitForStatus(server, holding.id, 'running');

    const session = await harness.newSession();
    const queued = await harness.submit(session.id, 'queued opening words');
    assert.equal(queued.status, 'queued');
    const clientRequestId = randomUUID();
    const first = await steer(session.id, 'and mind the tests', { clientRequestId });
    assert.deepEqual([first.status, first.json.delivery, first.json.id, first.json.status], [202, 'steered', queued.id, 'queued']);
    const retry = await steer(session.id, 'and mind the tests', { clientRequestId });
    assert.deepEqual([retry.status, retry.json.delivery, retry.json.id], [202, 'steered', queued.id], 'a retry answers what the first answered');
    const withoutSteer = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'and mind the tests', clientRequestId } });
    assert.deepEqual([withoutSteer.json.delivery, withoutSteer.json.id], ['steered', queued.id], 'the id is the steer\'s, whatever the retry says of steering');
    const conflict = await steer(session.id, 'something else', { clientRequestId });
    assert.deepEqual([conflict.status, conflict.json.error.code], [409, 'idempotency_conflict']);
    const replayedTurn = await steer(session.id, 'queued opening words', { clientRequestId: queued.clientRequestId });
    assert.deepEqual([replayedTurn.json.delivery, replayedTurn.json.id], ['queued', queued.id], 'the turn\'s own id answers as the turn');

    await server.request('POST', `/v1/turns/${holding.id}/cancel`);
    const done = await waitForTurn(server, queued.id);
    assert.equal(done.status, 'completed', done.error);
    const requests = requestsOf(fake, 'queued opening words');
    assert.equal(requests.length, 1, 'no extra request: the first one showed it');
    assert.equal(timesIn(requests[0], 'and mind the tests'), 1, 'shown once, the retries included');
    assert.ok(positionIn(requests[0], 'and mind the tests') > positionIn(requests[0], 'queued opening words'));
    const steeredEvents = harness.events.ofTurn(queued.id).filter((event) => event.type === 'turn.steered');
    assert.equal(steeredEvents.length, 1, 'one event for the steer and its retries');

    const afterEnd = await steer(session.id, 'and mind the tests', { clientRequestId });
    assert.deepEqual([afterEnd.json.delivery, afterEnd.json.id, afterEnd.json.status], ['steered', queued.id, 'completed'], 'after the end, the retry still answers the turn it joined');
  });

  it('the SDK steers: steerTurn answers the delivery, typed', async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await harness.newSession();
    fake.enqueue({ kind: 'slow-first-byte', delayMs: 800, text: 'slow' }, { kind: 'reply', text: 'steered answer' });
    const turn = await client.submitTurn(session.id, 'sdk opening');
    const steered: Turn = await client.steerTurn(session.id, 'sdk steer');
    assert.deepEqual([steered.delivery, steered.id], ['steered', turn.id]);
    assert.equal(turn.delivery, 'queued');
    const result = await client.waitForTurn(turn.id);
    assert.equal(result.output?.assistantText, 'steered answer');
    assert.equal(timesIn(requestsOf(fake, 'sdk opening').at(-1)!, 'sdk steer'), 1);
  });

  it('refusals: blank input, files, a steer that is not a boolean, an unknown session', async () => {
    const session = await harness.newSession();
    const blank = await steer(session.id, '  ');
    assert.deepEqual([blank.status, blank.json.error.code], [422, 'empty_input']);
    const files = await steer(session.id, 'see the file', { files: [{ name: 'a.txt', mimeType: 'text/plain', data: 'aGk=' }] });
    assert.deepEqual([files.status, files.json.error.code, files.json.error.details], [422, 'invalid_attachment', { entry: 'files[0]' }]);
    const notBoolean = await steer(session.id, 'x', { steer: 'yes' });
    assert.deepEqual([notBoolean.status, notBoolean.json.error.code], [400, 'invalid_json']);
    const missing = await steer(randomUUID(), 'x');
    assert.deepEqual([missing.status, missing.json.error.code], [404, 'session_not_found']);
    assert.equal((await server.request('GET', `/v1/turns?sessionId=${session.id}`)).json.data.length, 0, 'nothing was admitted');
  });

  it('a /compact turn takes no steer: the input waits for it and becomes its own turn', async () => {
    const session = await harness.newSession();
    fake.enqueue({ kind: 'reply', text: 'first answer' });
    await waitForTurn(server, (await harness.submit(session.id, 'something to compact')).id);
    fake.enqueue({ kind: 'slow-first-byte', delayMs: 800, text: 'the summary' }, { kind: 'reply', text: 'after compaction' });
    const compact = await harness.submit(session.id, '/compact');
    const answer = await steer(session.id, 'after the summary');
    assert.equal(answer.json.delivery, 'queued');
    assert.notEqual(answer.json.id, compact.id);
    assert.equal((await waitForTurn(server, compact.id)).status, 'completed');
    assert.equal((await waitForTurn(server, answer.json.id)).status, 'completed');
    assert.equal(timesIn(fake.requests.at(-1)!, 'after the summary'), 1);
  });
});

describe('steering raced against the end of a turn', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServer({ confinement: 'off' });
  before(() => ({ fake, server } = harness));
  const { steer, requestsOf } = steerHelpers(harness);

  /**
   * The invariant: steered, the input is in the turn's last request once and in no earlier one,
   * and the turn's history holds it; queued, it is a turn of its own whose request shows it, and
   * the first turn never showed it.
   */
  async function assertShownOnceOrOwnTurn(opening: string, steered: string, turnId: string, answer: any): Promise<void> {
    assert.equal(answer.status, 202, answer.text);
    assert.equal((await waitForTurn(server, turnId)).status, 'completed');
    if (answer.json.delivery === 'steered') {
      const requests = requestsOf(fake, opening);
      assert.equal(answer.json.id, turnId);
      const shown = requests.map((request) => timesIn(request, steered));
      assert.equal(shown.at(-1), 1, `the turn's last request shows it once (${shown})`);
      assert.equal(shown.slice(0, -1).filter((times) => times > 0).length, 0, 'no earlier request did');
    } else {
      assert.equal(answer.json.delivery, 'queued');
      assert.notEqual(answer.json.id, turnId);
      assert.equal((await waitForTurn(server, answer.json.id)).status, 'completed');
      // the session's requests: the first turn's, then the one of the steer's own turn
      const all = requestsOf(fake, opening);
      assert.equal(timesIn(all.at(-1)!, steered), 1, 'its own turn showed it');
      assert.ok(all.slice(0, -1).every((request) => timesIn(request, steered) === 0), 'the first turn never did');
    }
  }

  it('during the last model step: the request in flight runs to its end, then one more request shows the input', async () => {
    const session = await harness.newSession();
    const opening = `last step ${randomUUID()}`;
    fake.enqueue({ kind: 'slow-first-byte', delayMs: 1000, text: 'I would have stopped here.' }, { kind: 'reply', text: 'Taking the steer into account.' });
    const count = fake.requests.length;
    const turn = await harness.submit(session.id, opening);
    await fake.waitForRequests(count + 1);
    const answer = await steer(session.id, 'one more thing');
    assert.equal(answer.json.delivery, 'steered');
    await assertShownOnceOrOwnTurn(opening, 'one more thing', turn.id, answer);
    const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
    assert.equal(result.output.assistantText, 'Taking the steer into account.', 'the answer is the one that saw the steer');
    assert.equal(requestsOf(fake, opening).length, 2);
  });

  it('during a tool: the tool runs to its end; its output, then the input, go in the next request', async () => {
    const session = await harness.newSession();
    const opening = `tool ${randomUUID()}`;
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_sleep', ['sleep', '1.5'])] }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, opening);
    const approval = await harness.nthRequestOf(turn.id, 1);
    await harness.resolve(approval.id, { decision: 'allow_once' });
    await harness.events.waitFor((event) => event.type === 'tool.updated' && event.data.turnId === turn.id);
    const answer = await steer(session.id, 'while it sleeps');
    assert.equal(answer.json.delivery, 'steered');
    await assertShownOnceOrOwnTurn(opening, 'while it sleeps', turn.id, answer);
    const [, second] = requestsOf(fake, opening);
    assert.ok(positionIn(second, 'while it sleeps') > positionIn(second, 'call_sleep'));
    assert.equal(harness.events.ofTurn(turn.id).filter((event) => event.type === 'tool.finished').length, 1, 'the tool was not cut short');
  });

  it('while waiting for input: the request stays pending until answered, and the answer is not the steer', async () => {
    const session = await harness.newSession();
    const opening = `waiting ${randomUUID()}`;
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch_waiting', ['touch', 'waiting.txt'])] }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, opening);
    const approval = await harness.nthRequestOf(turn.id, 1);
    const answer = await steer(session.id, 'deny is not what I said');
    assert.equal(answer.json.delivery, 'steered');
    assert.equal(answer.json.status, 'waiting_for_input');
    const pending = (await server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data;
    assert.deepEqual(pending.map((request: any) => request.id), [approval.id], 'still waiting for its answer');
    await harness.resolve(approval.id, { decision: 'deny' });
    await assertShownOnceOrOwnTurn(opening, 'deny is not what I said', turn.id, answer);
    assert.equal(harness.toolOutputSent('call_touch_waiting'), DENIED_OUTPUT, 'the call got the human\'s answer, not the steer');
  });

  it('just after the terminal write: a turn of its own', async () => {
    const session = await harness.newSession();
    const opening = `after ${randomUUID()}`;
    fake.enqueue({ kind: 'reply', text: 'over' });
    const turn = await harness.submit(session.id, opening);
    await waitForTurn(server, turn.id);
    fake.enqueue({ kind: 'reply', text: 'the steer as a turn' });
    const answer = await steer(session.id, 'too late for it');
    assert.equal(answer.json.delivery, 'queued');
    await assertShownOnceOrOwnTurn(opening, 'too late for it', turn.id, answer);
  });

  it('steers racing the end at many offsets: each is shown exactly once, or is its own turn', async () => {
    const deliveries = { steered: 0, queued: 0 };
    for (let round = 0; round < 16; round++) {
      const session = await harness.newSession();
      const opening = `race ${round} ${randomUUID()}`;
      const steered = `racing steer ${round}`;
      fake.route(opening, { kind: 'slow-first-byte', delayMs: 150, text: 'quick answer' }, { kind: 'reply', text: 'saw it' });
      const turn = await harness.submit(session.id, opening);
      // from before the request ends to after the turn is stored
      await new Promise((resolve) => setTimeout(resolve, 100 + round * 10));
      const answer = await steer(session.id, steered);
      deliveries[answer.json.delivery as 'steered' | 'queued']++;
      await assertShownOnceOrOwnTurn(opening, steered, turn.id, answer);
    }
    assert.ok(deliveries.steered > 0, `some steers joined the turn (${JSON.stringify(deliveries)})`);
  });
});
