import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, fakeProviderModels, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { EventRecorder } from '../support/events.ts';
import { useFakeServer } from '../support/harness.ts';
import { createClient, isReplayReset, type AgentdEvent, type EventSubscription, type StreamItem } from '../../src/client/index.ts';

const FAST_BACKOFF = { initialMs: 50, maxMs: 200 };
const LONG_TEXT = Array.from({ length: 40 }, (_, index) => `word${index}`).join(' ');

const openStreams = new Set<EventSubscription>();
after(() => openStreams.forEach((stream) => stream.close()));

/** Consumes a subscription in the background, keeping everything it yields. */
function collect(stream: EventSubscription) {
  openStreams.add(stream);
  const items: StreamItem[] = [];
  const waiters: Array<() => void> = [];
  let failure: unknown;
  const done = (async () => {
    try {
      for await (const item of stream) {
        items.push(item);
        for (const wake of waiters.splice(0)) wake();
      }
    } catch (error) {
      failure = error;
    }
  })();
  const waitFor = async (test: (items: StreamItem[]) => boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!test(items)) {
      if (failure) throw failure;
      if (Date.now() > deadline) throw new Error(`not seen within ${timeoutMs} ms: ${items.map((item) => item.type).join(', ')}`);
      await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), new Promise((resolve) => setTimeout(resolve, 50))]);
    }
  };
  const events = () => items.filter((item): item is AgentdEvent => !isReplayReset(item));
  return { items, events, waitFor, done };
}

function assertStrictlyIncreasing(events: AgentdEvent[]): void {
  const ids = events.map((event) => event.id);
  for (let index = 1; index < ids.length; index++) assert.ok(ids[index] > ids[index - 1], `id ${ids[index]} after ${ids[index - 1]}: ${ids.join(',')}`);
}

const isTerminalOf = (turnId: string) => (items: StreamItem[]) =>
  items.some((item) => !isReplayReset(item) && item.turnId === turnId && ['turn.completed', 'turn.failed', 'turn.cancelled'].includes(item.type));

describe('client.events() on one server', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  let recorder!: EventRecorder;
  const harness = useFakeServer();
  before(() => ({ fake, server, events: recorder } = harness));

  it('resumes a dropped connection with Last-Event-ID: nothing lost, a replayed duplicate never yielded twice', async () => {
    let connections = 0;
    let dropFirst: () => void = () => undefined;
    const sentLastEventIds: string[] = [];
    // The first connection can be cut; every reconnect asks from 5 ids earlier than it should, the
    // way a confused proxy or server might, so already-applied events come again.
    const droppingFetch: typeof fetch = (input, init) => {
      if (!String(input).includes('/v1/events')) return fetch(input, init);
      connections += 1;
      const headers = { ...(init?.headers as Record<string, string>) };
      if (headers['last-event-id']) {
        headers['last-event-id'] = String(Math.max(0, Number(headers['last-event-id']) - 5));
        sentLastEventIds.push(headers['last-event-id']);
      }
      const cut = new AbortController();
      init?.signal?.addEventListener('abort', () => cut.abort());
      if (connections === 1) dropFirst = () => cut.abort();
      return fetch(input, { ...init, headers, signal: cut.signal });
    };
    const client = createClient({ baseUrl: server.url, fetch: droppingFetch });
    const session = await client.createSession();
    const reconnects: number[] = [];
    const stream = client.events({ sessionId: session.id, backoff: FAST_BACKOFF, onReconnect: (info) => reconnects.push(info.delayMs) });
    const seen = collect(stream);
    await stream.opened; // connected: the turn's first events cannot come before it

    fake.enqueue({ kind: 'reply', text: LONG_TEXT, chunkDelayMs: 15 });
    const turn = await client.submitTurn(session.id, 'talk slowly');
    await seen.waitFor((items) => items.some((item) => item.type === 'response.text.delta'));
    dropFirst();
    await seen.waitFor(isTerminalOf(turn.id));
    stream.close();
    await seen.done;

    assert.equal(reconnects.length, 1, 'one drop, one reconnect');
    assert.ok(sentLastEventIds.length >= 1, 'the reconnect asked for events already applied');
    const events = seen.events();
    assertStrictlyIncreasing(events);
    // session.created came before the subscription; everything after it is the stream's
    const expected = recorder.events.filter((event) => event.data.sessionId === session.id && event.type !== 'session.created').map((event) => Number(event.id));
    assert.deepEqual(events.map((event) => event.id), expected, 'exactly the events the server published for the session');
    const text = events.filter((event) => event.type === 'response.text.delta').map((event) => (event.data as { text: string }).text).join('');
    assert.equal(text, LONG_TEXT);
    assert.equal(stream.lastEventId, events.at(-1)?.id);
  });

  it('connects when subscribed, not at the first next(): once opened, a turn submitted before iterating is seen whole', async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await client.createSession();
    const stream = client.events({ sessionId: session.id, backoff: FAST_BACKOFF });
    await stream.opened;
    const turn = await client.submitTurn(session.id, 'before anyone iterates');
    await client.waitForTurn(turn.id);
    const seen = collect(stream);
    await seen.waitFor(isTerminalOf(turn.id));
    stream.close();
    await seen.done;
    const types = seen.events().filter((event) => event.turnId === turn.id).map((event) => event.type);
    assert.equal(types[0], 'turn.queued', `from the turn's first event: ${types.join(', ')}`);
    assert.equal(types.at(-1), 'turn.completed');
  });

  it('rejects opened when the first connection fails, and the iterator tells the same error', async () => {
    const client = createClient({ baseUrl: server.url });
    const stream = client.events({ sessionId: 'not-a-uuid', backoff: FAST_BACKOFF });
    await assert.rejects(stream.opened, { name: 'AgentdError', status: 400 });
    await assert.rejects(() => stream.next(), { name: 'AgentdError', status: 400 });
  });

  it('yields replay.reset as its own value, then the events that follow', async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await client.createSession();
    const stream = client.events({ lastEventId: 10 ** 12, sessionId: session.id, backoff: FAST_BACKOFF });
    const seen = collect(stream);
    await seen.waitFor((items) => items.length >= 1);
    assert.deepEqual(seen.items[0], { type: 'replay.reset', data: { reason: 'event_gap', refetch: true } });
    const turn = await client.submitTurn(session.id, 'after the reset');
    await seen.waitFor(isTerminalOf(turn.id));
    stream.close();
    await seen.done;
    assert.ok(seen.events().some((event) => event.type === 'turn.completed' && event.turnId === turn.id), 'ids below the stale cursor are not mistaken for duplicates');
  });

  it('ends an unusable subscription with the AgentdError (no endless retry on 400)', async () => {
    const client = createClient({ baseUrl: server.url });
    const stream = client.events({ sessionId: 'not-a-uuid', backoff: FAST_BACKOFF });
    await assert.rejects(() => stream.next(), { name: 'AgentdError', status: 400, code: 'invalid_query' });
  });
});

describe('client.events() across a server restart', () => {
  let fake: FakeProvider;
  let server: TestServer;
  before(async () => {
    fake = await startFakeProvider();
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('keeps the stream through a restart mid-turn: every event of the first life, a replay.reset, then the new events, none twice', async () => {
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl) });
    const recorder = new EventRecorder(server.url, { lastEventId: 0 });
    await recorder.opened;
    // One stable address in front of whichever server lives now, as a proxy or a fixed port would be.
    const toCurrentServer: typeof fetch = (input, init) => fetch(String(input).replace('http://agentd.invalid', server.url), init);
    const client = createClient({ baseUrl: 'http://agentd.invalid', fetch: toCurrentServer });
    const session = await client.createSession();
    let opened = 0;
    const stream = client.events({ sessionId: session.id, backoff: FAST_BACKOFF, onOpen: () => opened++ });
    const seen = collect(stream);
    while (opened === 0) await new Promise((resolve) => setTimeout(resolve, 10));

    fake.enqueue({ kind: 'hang', afterText: 'half an answer' });
    const first = await client.submitTurn(session.id, 'interrupted');
    await seen.waitFor((items) => items.some((item) => item.type === 'response.text.delta'));
    await server.stop();
    await seen.waitFor(isTerminalOf(first.id));
    const firstLife = recorder.events.filter((event) => event.data.turnId === first.id).map((event) => Number(event.id));
    recorder.close();

    await new Promise((resolve) => setTimeout(resolve, 300)); // reconnects meanwhile are refused
    server = await startTestServer({ reuse: { backend: server.backend, workspace: server.workspace }, models: fakeProviderModels(fake.baseUrl) });
    fake.enqueue({ kind: 'reply', text: 'second life' });
    const second = await client.submitTurn(session.id, 'after the restart');
    const result = await client.waitForTurn(second.id);
    assert.equal(result.output?.assistantText, 'second life');
    await seen.waitFor(isTerminalOf(second.id));
    stream.close();
    await seen.done;

    const events = seen.events();
    assertStrictlyIncreasing(events);
    const ofFirst = events.filter((event) => event.turnId === first.id);
    assert.deepEqual(ofFirst.map((event) => event.id), firstLife, 'nothing of the first life lost');
    assert.equal(ofFirst.at(-1)?.type, 'turn.cancelled');
    const resetAt = seen.items.findIndex((item) => isReplayReset(item));
    assert.ok(resetAt > seen.items.indexOf(ofFirst.at(-1)!), 'the restart lost the replay window: the client is told to refetch');
    const ofSecond = events.filter((event) => event.turnId === second.id).map((event) => event.type);
    assert.equal(ofSecond[0], 'turn.queued');
    assert.equal(ofSecond.at(-1), 'turn.completed');
  });
});
