import { describe, it, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { startTestServer, fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { drainRawEventStream, EventRecorder, openRawEventStream } from '../support/events.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';

async function runTurn(server: TestServer, fake: FakeProvider, text: string): Promise<string> {
  const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
  fake.enqueue({ kind: 'reply', text });
  const turn = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'go' } });
  await waitForTurn(server, turn.json.id);
  return turn.json.id;
}

const rawSubscribe = (server: TestServer, headers: Record<string, string> = {}) => openRawEventStream(server.url, headers);

describe('events over SSE', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const started = useServerOnFakeProvider({ args: ['--event-replay-limit', '40'], keepAliveMs: 200 });
  before(() => ({ fake, server } = started));

  it('sends frames with id, event and the envelope; live only without Last-Event-ID', async () => {
    await runTurn(server, fake, 'before anyone listened');
    const live = new EventRecorder(server.url);
    await live.opened;
    const turnId = await runTurn(server, fake, 'one two three');
    await live.waitForType('turn.completed', turnId);
    // the turn's events, and its session's (created, then named by the turn): nothing from before the connection
    const sessionId = live.ofTurn(turnId)[0].data.sessionId;
    assert.ok(live.events.every((event) => event.data.turnId === turnId || (event.type.startsWith('session.') && event.data.sessionId === sessionId)), 'nothing from before the connection');
    const deltas = live.ofTurn(turnId).filter((event) => event.type === 'response.text.delta').map((event) => event.data.data.text);
    assert.equal(deltas.join(''), 'one two three');
    for (const event of live.events) {
      assert.equal(String(event.data.id), event.id);
      assert.equal(event.data.type, event.type);
      assert.match(event.data.at, /Z$/);
    }
    live.close();
  });

  it('resumes after a reconnect with Last-Event-ID without loss or duplicates', async () => {
    const first = new EventRecorder(server.url);
    await first.opened;
    const firstTurn = await runTurn(server, fake, 'alpha beta');
    await first.waitForType('turn.completed', firstTurn);
    const lastSeen = Number(first.events.at(-1)!.id);
    first.close();
    // events happen while the client is away
    const missedTurn = await runTurn(server, fake, 'gamma delta');
    const second = new EventRecorder(server.url, { lastEventId: lastSeen });
    await second.waitForType('turn.completed', missedTurn);
    const liveTurn = await runTurn(server, fake, 'epsilon');
    await second.waitForType('turn.completed', liveTurn);
    const ids = [...first.events, ...second.events].map((event) => Number(event.id));
    assert.deepEqual(ids, [...new Set(ids)].sort((a, b) => a - b), 'ids strictly increase across the reconnect');
    for (let index = 1; index < ids.length; index++) assert.equal(ids[index], ids[index - 1] + 1, 'no gap');
    assert.equal(second.events[0].type === 'replay.reset', false);
    second.close();
  });

  it('sends replay.reset first when Last-Event-ID is older than the window or newer than the newest', async () => {
    const turnId = await runTurn(server, fake, Array.from({ length: 60 }, (_, index) => `w${index}`).join(' '));
    const probe = new EventRecorder(server.url, { lastEventId: 1 });
    await probe.waitForType('turn.completed', turnId);
    assert.equal(probe.events[0].type, 'replay.reset');
    assert.deepEqual(probe.events[0].data, { reason: 'event_gap', refetch: true });
    assert.equal(probe.events.filter((event) => event.type !== 'replay.reset').length, 40, 'then the whole retained window');
    probe.close();
    const newest = Number(probe.events.at(-1)!.id);
    const ahead = new EventRecorder(server.url, { lastEventId: newest + 5 });
    await ahead.waitForType('replay.reset');
    ahead.close();
    const atEdge = new EventRecorder(server.url, { lastEventId: newest - 40 });
    // connected (and replayed) before the next turn's session.created moves the window on
    await atEdge.opened;
    const edgeTurn = await runTurn(server, fake, 'edge');
    await atEdge.waitForType('turn.completed', edgeTurn);
    assert.notEqual(atEdge.events[0].type, 'replay.reset', 'L = oldest - 1 is still inside the window');
    assert.equal(Number(atEdge.events[0].id), newest - 39);
    atEdge.close();
  });

  it('rejects a malformed Last-Event-ID', async () => {
    for (const value of ['abc', '-1', '1.5']) {
      const response = await server.request('GET', '/v1/events', { headers: { 'last-event-id': value } });
      assert.equal(response.status, 400);
      assert.equal(response.json.error.code, 'invalid_last_event_id');
    }
  });

  it('bounds event text at 16,383 characters plus an ellipsis, with the flag', async () => {
    const recorder = new EventRecorder(server.url);
    await recorder.opened;
    const long = 'x'.repeat(20_000);
    const turnId = await runTurn(server, fake, `${'y'.repeat(16_382)} ${long}`);
    await recorder.waitForType('turn.completed', turnId);
    const deltas = recorder.ofTurn(turnId).filter((event) => event.type === 'response.text.delta').map((event) => event.data.data);
    const atLimit = deltas.find((delta) => delta.text.startsWith('y'));
    assert.equal(atLimit.truncated, false);
    assert.equal(atLimit.text.length, 16_383, 'the word and its trailing space: exactly at the limit');
    const cut = deltas.find((delta) => delta.text.startsWith('x'));
    assert.equal(cut.truncated, true);
    assert.equal(cut.text.length, 16_384);
    assert.ok(cut.text.endsWith('…'));
    const result = await server.request('GET', `/v1/turns/${turnId}/result`);
    assert.equal(result.json.output.assistantTextTruncated, true);
    recorder.close();
  });

  it('sends keep-alive comments when idle', async () => {
    const response = await rawSubscribe(server);
    let text = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (text += chunk));
    await new Promise((resolve) => setTimeout(resolve, 500));
    response.destroy();
    assert.match(text, /^: keep-alive\n\n/m);
    assert.equal(response.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.ok(response.headers['x-request-id']);
  });

  it('gives a slow consumer a gap reset without slowing a fast one', async () => {
    const slow = await rawSubscribe(server);
    slow.pause();
    const fast = new EventRecorder(server.url);
    await fast.opened;
    // 6.4 MB in all, more than the socket buffers hold, spread over turns because one model step
    // may stream at most 2,000,000 characters.
    let turnId = '';
    for (let round = 0; round < 4; round++) {
      const words = Array.from({ length: 100 }, (_, index) => `${round}.${index}${'z'.repeat(16_000)}`);
      turnId = await runTurn(server, fake, words.join(' '));
      await fast.waitForType('turn.completed', turnId, 30_000);
      const fastDeltas = fast.ofTurn(turnId).filter((event) => event.type === 'response.text.delta');
      assert.equal(fastDeltas.length, 100, 'the fast consumer got every delta');
    }
    assert.ok(!fast.events.some((event) => event.type === 'replay.reset'));
    fast.close();

    const text = await drainRawEventStream(slow, `"type":"turn.completed","turnId":"${turnId}"`);
    assert.match(text, /event: replay\.reset\ndata: \{"reason":"event_gap","refetch":true\}\n\n/);
    assert.ok(text.includes('turn.completed'), 'after the reset the newest events still arrive');
  });
});

describe('subscriber limits', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ args: ['--max-event-subscribers', '3'] });
  });
  after(async () => server.close());

  it('enforces the subscriber limit with 429 and frees the slot on disconnect', async () => {
    const open = await Promise.all([rawSubscribe(server), rawSubscribe(server), rawSubscribe(server)]);
    assert.deepEqual(open.map((response) => response.statusCode), [200, 200, 200]);
    const refused = await server.request('GET', '/v1/events');
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error.code, 'event_subscriber_limit');
    open[0].destroy();
    // the server learns of the disconnect asynchronously: ask until the slot is free, by order, not by the clock
    let again = await rawSubscribe(server);
    for (let attempt = 0; again.statusCode === 429 && attempt < 200; attempt++) {
      again.destroy();
      await new Promise((resolve) => setImmediate(resolve));
      again = await rawSubscribe(server);
    }
    assert.equal(again.statusCode, 200);
    again.destroy();
    for (const response of open) response.destroy();
  });

});

describe('shutdown', () => {
  it('ends open event streams when the server stops, instead of waiting for clients to leave', async () => {
    const server = await startTestServer();
    const stream = await rawSubscribe(server);
    stream.resume();
    const ended = new Promise<'ended'>((resolve) => stream.on('end', () => resolve('ended')));
    // about time by nature: a close that waited for the client would never finish; 10 s is far
    // beyond a loaded machine's close of an idle server (well under a second here)
    let bound: NodeJS.Timeout | undefined;
    const stillOpen = new Promise<'still open'>((resolve) => (bound = setTimeout(() => resolve('still open'), 10_000)));
    const outcome = await Promise.race([Promise.all([server.close(), ended]).then(() => 'ended' as const), stillOpen]);
    clearTimeout(bound);
    assert.equal(outcome, 'ended', 'the stream ended and close returned while the client stayed connected');
    assert.equal(stream.readableEnded, true);
  });
});

describe('event ids across a restart', () => {
  it('never repeats an id, and replays nothing from before the restart', async () => {
    const fake = await startFakeProvider();
    const first = await startTestServer({ models: fakeProviderModels(fake.baseUrl) });
    const recorder = new EventRecorder(first.url);
    await recorder.opened;
    const turnId = await runTurn(first, fake, 'before');
    await recorder.waitForType('turn.completed', turnId);
    recorder.close();
    const lastBefore = Number(recorder.events.at(-1)!.id);
    await first.stop();
    const second = await startTestServer({ reuse: { backend: first.backend, workspace: first.workspace }, models: fakeProviderModels(fake.baseUrl) });
    try {
      const resumed = new EventRecorder(second.url, { lastEventId: lastBefore });
      const afterTurn = await runTurn(second, fake, 'after');
      await resumed.waitForType('turn.completed', afterTurn);
      assert.equal(resumed.events[0].type, 'replay.reset', 'the window did not survive the restart');
      const newIds = resumed.events.filter((event) => event.type !== 'replay.reset').map((event) => Number(event.id));
      assert.ok(newIds.every((id) => id > lastBefore));
      resumed.close();
    } finally {
      await second.close();
      await fake.close();
    }
  });
});

/** Reads a raw SSE response until `until` appears in it, then closes it; returns the text. */
function readStream(server: TestServer, path: string, until: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}${path}`, { headers }, (res) => {
      let text = '';
      const timer = setTimeout(() => (res.destroy(), resolve({ status: res.statusCode ?? 0, text })), 5_000);
      res.on('data', (chunk) => {
        text += chunk;
        if (text.includes(until) || res.statusCode !== 200) {
          clearTimeout(timer);
          res.destroy();
          resolve({ status: res.statusCode ?? 0, text });
        }
      });
      res.on('end', () => (clearTimeout(timer), resolve({ status: res.statusCode ?? 0, text })));
    });
    req.on('error', reject);
    req.end();
  });
}

const frameIds = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
const frameSessions = (text: string) => [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]).sessionId as string | undefined);

describe('events: the sessionId filter and the lastEventId query parameter', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const started = useServerOnFakeProvider({ args: ['--event-replay-limit', '200'] });
  before(() => ({ fake, server } = started));

  it('replays and streams only the named session, with the ids of the whole stream', async () => {
    const mine = await runTurn(server, fake, 'mine');
    const others = await runTurn(server, fake, 'not mine');
    const mineTurn = (await server.request('GET', `/v1/turns/${mine}`)).json;
    const all = await readStream(server, '/v1/events?lastEventId=0', `"turnId":"${others}","at"`);
    const filtered = await readStream(server, `/v1/events?lastEventId=0&sessionId=${mineTurn.sessionId.toUpperCase()}`, 'turn.completed');
    assert.equal(filtered.status, 200);
    assert.ok(frameIds(filtered.text).length > 0);
    assert.ok(frameSessions(filtered.text).every((sessionId) => sessionId === mineTurn.sessionId), 'nothing of another session');
    const allIds = frameIds(all.text);
    assert.ok(frameIds(filtered.text).every((id) => allIds.includes(id)), 'the same ids as the unfiltered stream');
    // live: a turn in another session is not sent, one in this session is
    const live = readStream(server, `/v1/events?sessionId=${mineTurn.sessionId}`, 'turn.completed');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await runTurn(server, fake, 'elsewhere');
    fake.enqueue({ kind: 'reply', text: 'again' });
    await server.request('POST', `/v1/sessions/${mineTurn.sessionId}/turns`, { body: { input: 'again' } });
    const liveText = (await live).text;
    assert.ok(frameSessions(liveText).every((sessionId) => sessionId === mineTurn.sessionId));
    assert.match(liveText, /turn\.completed/);
  });

  it('takes lastEventId from the query only when the header is absent, and validates it alike', async () => {
    const turnId = await runTurn(server, fake, 'resume me');
    const all = await readStream(server, '/v1/events?lastEventId=0', `"turnId":"${turnId}","at"`);
    const ids = frameIds(all.text);
    const resumeAfter = ids.at(-2)!;
    const byQuery = await readStream(server, `/v1/events?lastEventId=${resumeAfter}`, `id: ${ids.at(-1)}`);
    assert.equal(frameIds(byQuery.text)[0], ids.at(-1), 'the query parameter resumes like the header');
    const headerWins = await readStream(server, `/v1/events?lastEventId=${resumeAfter}`, `id: ${ids.at(-1)}`, { 'last-event-id': String(ids.at(-3)) });
    assert.equal(frameIds(headerWins.text)[0], ids.at(-2), 'the header is used when present');
    for (const bad of ['-1', 'abc', '1e3', '0&lastEventId=1']) {
      const response = await server.request('GET', `/v1/events?lastEventId=${bad}`);
      assert.equal(response.status, 400, bad);
      assert.equal(response.json.error.code, 'invalid_last_event_id', bad);
    }
    const beyond = await readStream(server, `/v1/events?lastEventId=${ids.at(-1)! + 1000}&sessionId=${(await server.request('GET', `/v1/turns/${turnId}`)).json.sessionId}`, 'replay.reset');
    assert.match(beyond.text, /^event: replay\.reset$/m, 'a filtered stream still gets replay.reset');
  });
});
