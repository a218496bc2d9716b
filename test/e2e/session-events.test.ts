/**
 * `session.created`, `session.updated` and `session.deleted` (CONTRACT.md §19) through the real
 * server on both stores: a client that lists sessions hears of every creation (a fork too),
 * rename (by PATCH or by the first turn), archive and deletion, with the session as a GET answers
 * it, and the SSE `sessionId` filter keeps them to their session.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { EventRecorder, type ReceivedEvent } from '../support/events.ts';
import { useFakeServer } from '../support/harness.ts';
import type { AgentdEvent } from '../../src/client/index.ts';

const sessionEvents = (events: ReceivedEvent[], sessionId: string) =>
  events.filter((event) => event.type.startsWith('session.') && !event.type.startsWith('session.setup') && event.data.sessionId === sessionId);

for (const backend of BACKENDS) {
  describe(`session events on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, confinement: 'off' });
    before(() => ({ fake, server } = harness));

    it('creation, PATCH, the first turn\'s title, a fork and deletion each send their event with the session', async () => {
      const { events } = harness;
      const session = await harness.newSession({});
      const created = await events.waitFor((event) => event.type === 'session.created' && event.data.sessionId === session.id);
      assert.equal(created.data.turnId, null);
      assert.deepEqual(created.data.data, { session });

      const renamed = (await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'Renamed' } })).json;
      const update = await events.waitFor((event) => event.type === 'session.updated' && event.data.data.session.title === 'Renamed');
      assert.deepEqual(update.data.data.session, renamed);
      assert.equal(update.data.sessionId, session.id);

      const archived = (await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { archived: true } })).json;
      const archiving = await events.waitFor((event) => event.type === 'session.updated' && event.data.data.session.archived === true && event.data.sessionId === session.id);
      assert.deepEqual(archiving.data.data.session, archived);

      // the first turn of an untitled session names it: the same event, with the stored session
      const untitled = await harness.newSession({});
      fake.enqueue({ kind: 'reply', text: 'Named.', usage: { input: 3, output: 2 } });
      const turn = await harness.submit(untitled.id, `Fix the parser on ${backend}\nthen more`);
      await waitForTurn(server, turn.id);
      const titled = await events.waitFor((event) => event.type === 'session.updated' && event.data.sessionId === untitled.id);
      assert.equal(titled.data.data.session.title, `Fix the parser on ${backend}`);
      assert.deepEqual(titled.data.data.session, (await server.request('GET', `/v1/sessions/${untitled.id}`)).json);
      const completed = events.events.find((event) => event.type === 'turn.completed' && event.data.turnId === turn.id)!;
      assert.ok(Number(titled.id) < Number(completed.id), 'the title is announced before the turn ends');
      // a later turn keeps the title: no second session.updated
      fake.enqueue({ kind: 'reply', text: 'Again.' });
      const second = await harness.submit(untitled.id, 'second');
      await waitForTurn(server, second.id);
      await events.waitFor((event) => event.type === 'turn.completed' && event.data.turnId === second.id);
      assert.equal(sessionEvents(events.events, untitled.id).filter((event) => event.type === 'session.updated').length, 1);

      const fork = (await server.request('POST', `/v1/sessions/${untitled.id}/fork`, { body: { title: 'Fork' } })).json;
      const forked = await events.waitFor((event) => event.type === 'session.created' && event.data.sessionId === fork.id);
      assert.deepEqual(forked.data.data.session, fork);

      assert.equal((await server.request('DELETE', `/v1/sessions/${session.id}`)).status, 204);
      const deleted = await events.waitFor((event) => event.type === 'session.deleted' && event.data.sessionId === session.id);
      assert.deepEqual(deleted.data.data, {});
      assert.deepEqual(sessionEvents(events.events, session.id).map((event) => event.type), ['session.created', 'session.updated', 'session.updated', 'session.deleted']);
    });

    it('refused changes send nothing', async () => {
      const { events } = harness;
      const session = await harness.newSession({ title: 'Kept' });
      await events.waitFor((event) => event.type === 'session.created' && event.data.sessionId === session.id);
      assert.equal((await server.request('PATCH', `/v1/sessions/${session.id}`, { body: {} })).status, 400);
      assert.equal((await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'a', archived: true } })).status, 422);
      // an event sent after the refusals: had they sent one, it would be in the recorder before this
      const marker = await harness.newSession({});
      await events.waitFor((event) => event.type === 'session.created' && event.data.sessionId === marker.id);
      assert.deepEqual(sessionEvents(events.events, session.id).map((event) => event.type), ['session.created']);
    });

    it('the sessionId filter keeps a subscriber to its session\'s events', async () => {
      const watched = await harness.newSession({});
      const filtered = new EventRecorder(server.url, { query: `sessionId=${watched.id.toUpperCase()}` });
      try {
        await filtered.opened;
        const other = await harness.newSession({});
        await server.request('PATCH', `/v1/sessions/${other.id}`, { body: { title: 'Other' } });
        await server.request('PATCH', `/v1/sessions/${watched.id}`, { body: { title: 'Watched' } });
        await server.request('DELETE', `/v1/sessions/${watched.id}`);
        await filtered.waitFor((event) => event.type === 'session.deleted');
        assert.deepEqual(filtered.events.map((event) => [event.type, event.data.sessionId]), [
          ['session.updated', watched.id],
          ['session.deleted', watched.id],
        ]);
      } finally {
        filtered.close();
      }
    });

    it('the OpenAPI event union and the SDK\'s event type carry the three events', async () => {
      const document = (await server.request('GET', '/openapi.json')).json;
      const branches = document.components.schemas.EventEnvelope.oneOf ?? document.components.schemas.EventEnvelope.anyOf;
      const branch = (type: string) => branches.find((candidate: any) => candidate.properties.type.const === type || candidate.properties.type.enum?.[0] === type);
      for (const type of ['session.created', 'session.updated']) {
        assert.match(JSON.stringify(branch(type).properties.data.properties.session), /Session/, type);
      }
      assert.deepEqual(branch('session.deleted').properties.data.properties, {});
      // type-checked: the SDK's typed events narrow to the session
      const title = (event: AgentdEvent) => (event.type === 'session.updated' || event.type === 'session.created' ? event.data.session.title : null);
      assert.equal(title({ id: 1, type: 'session.deleted', turnId: null, sessionId: 'x', at: '', data: {} }), null);
    });
  });
}
