// CONTRACT.md §18, issue 30 item 5: one event stream across the instances of a cluster. A
// subscriber on any instance gets every event of the boundary once, in id order, whichever
// instance ran the turn; Last-Event-ID replays through any instance, from the window kept in
// PostgreSQL (--event-replay-limit). Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import pg from 'pg';
import { useTestCluster } from '../support/cluster.ts';
import { EventRecorder, type ReceivedEvent } from '../support/events.ts';

const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });
const ids = (events: ReceivedEvent[]) => events.map((event) => Number(event.id));
const summary = (events: ReceivedEvent[]) => events.map((event) => `${event.id} ${event.type}`);

function assertStrictlyIncreasing(events: ReceivedEvent[], where: string): void {
  const seen = ids(events);
  for (let index = 1; index < seen.length; index++) {
    assert.ok(seen[index] > seen[index - 1], `${where}: id ${seen[index]} after ${seen[index - 1]} (${summary(events).join(', ')})`);
  }
}

describe('one event stream across the instances of a cluster', () => {
  // a lease no loaded machine loses: this test is not about takeover
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '10', '--yolo']);
  const { start, subscribe } = cluster;
  const runTurn = async (agentd: AgentdProcess, sessionId: string, input: string) =>
    (await http('POST', `${agentd.url}/v1/sessions/${sessionId}/turns`, { body: { input } })).json;

  it('a subscriber on beta gets every event of a turn run on alpha, once and in order, and replays through beta', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const onAlpha = await subscribe(alpha);
    const onBeta = await subscribe(beta);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.enqueue({ kind: 'reply', text: 'Let me look around the workspace first.', toolCalls: [shellCall('call_ls', ['ls', '-a'])] }, { kind: 'reply', text: 'Nothing much here, as it turns out.' });
    const turn = await runTurn(alpha, session.id, 'look around');

    await onBeta.waitForType('turn.completed', turn.id, 30_000);
    await onAlpha.waitForType('turn.completed', turn.id, 30_000);
    const seenOnAlpha = onAlpha.ofTurn(turn.id);
    const seenOnBeta = onBeta.ofTurn(turn.id);
    const types = seenOnBeta.map((event) => event.type);
    for (const type of ['turn.queued', 'turn.started', 'response.text.delta', 'tool.started', 'tool.finished', 'turn.completed']) {
      assert.ok(types.includes(type), `beta saw ${type}: ${types.join(', ')}`);
    }
    assert.ok(types.filter((type) => type === 'response.text.delta').length >= 4, 'the deltas of both replies, one event each');
    // the same events, with the same ids, in the same order, on both instances
    assert.deepEqual(summary(seenOnBeta), summary(seenOnAlpha));
    assert.deepEqual(seenOnBeta.map((event) => event.data), seenOnAlpha.map((event) => event.data));
    assertStrictlyIncreasing(onBeta.events, 'beta');
    assert.equal(new Set(ids(onBeta.events)).size, onBeta.events.length, 'no event twice');

    // the doorbell: each instance listens on a connection of its own (polling is only the fallback)
    const client = new pg.Client({ connectionString: cluster.backend.databaseUrl! });
    await client.connect();
    const { rows } = await client.query("select count(*)::int as count from pg_stat_activity where query = 'listen agentd_events' and datname = current_database()").finally(() => client.end());
    assert.equal(rows[0].count, 2);

    // Last-Event-ID through beta: exactly what came after, no reset
    const middle = seenOnAlpha[Math.floor(seenOnAlpha.length / 2)];
    const replayed = await subscribe(beta, { lastEventId: Number(middle.id) });
    const last = seenOnAlpha.at(-1)!;
    await replayed.waitFor((event) => event.id === last.id);
    assert.deepEqual(summary(replayed.events), summary(onAlpha.events.filter((event) => Number(event.id) > Number(middle.id))));

    // resuming on alpha after an id seen on beta: the same
    const resumedOnAlpha = await subscribe(alpha, { lastEventId: Number(seenOnBeta[2].id) });
    await resumedOnAlpha.waitFor((event) => event.id === last.id);
    assert.deepEqual(summary(resumedOnAlpha.events), summary(onBeta.events.filter((event) => Number(event.id) > Number(seenOnBeta[2].id))));
  });

  it('concurrent turns on two instances: subscribers on both see identical, strictly increasing id sequences', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const watchers = [await subscribe(alpha), await subscribe(beta), await subscribe(alpha), await subscribe(beta)];
    const sessions = [];
    for (let index = 0; index < 4; index++) sessions.push((await http('POST', `${(index % 2 ? beta : alpha).url}/v1/sessions`, { body: {} })).json);
    // every reply is the default one: several deltas each, on both instances at once
    const turns = await Promise.all(sessions.map((session, index) => runTurn(index % 2 ? beta : alpha, session.id, `turn ${index}`)));
    for (const watcher of watchers) {
      for (const turn of turns) await watcher.waitForType('turn.completed', turn.id, 30_000);
    }
    // beyond the last completion every watcher got the same events: compare up to the newest id all hold
    const newest = Math.min(...watchers.map((watcher) => Math.max(...ids(watcher.events))));
    const upTo = (watcher: EventRecorder) => watcher.events.filter((event) => Number(event.id) <= newest);
    const reference = summary(upTo(watchers[0]));
    for (const watcher of watchers) {
      assertStrictlyIncreasing(watcher.events, 'a watcher');
      assert.deepEqual(summary(upTo(watcher)), reference);
    }
    // contiguous: nothing of the boundary was skipped between the first and the last
    const seen = ids(upTo(watchers[0]));
    assert.deepEqual(seen, seen.map((_, index) => seen[0] + index));
    for (const turn of turns) assert.ok(upTo(watchers[0]).some((event) => event.type === 'turn.completed' && event.data.turnId === turn.id));
  });

  it('the replay window lives in PostgreSQL, bounded by --event-replay-limit: an instance started later replays it, one id past it resets', async () => {
    const limit = ['--event-replay-limit', '6'];
    const alpha = await start('alpha', limit);
    const onAlpha = await subscribe(alpha);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    let lastTurn = '';
    for (let index = 0; index < 2; index++) {
      lastTurn = (await runTurn(alpha, session.id, `turn ${index}`)).id;
      await onAlpha.waitForType('turn.completed', lastTurn, 30_000);
    }
    const newest = Math.max(...ids(onAlpha.events));
    assert.ok(newest - onAlpha.events.length >= 0 && onAlpha.events.length > 6, 'more events than the window holds');
    const kept = onAlpha.events.filter((event) => Number(event.id) > newest - 6);

    // gamma starts after all of it: what it replays can only come from the database
    const gamma = await start('gamma', limit);
    const whole = await subscribe(gamma, { lastEventId: newest - 6 });
    await whole.waitFor((event) => Number(event.id) === newest);
    assert.deepEqual(summary(whole.events), summary(kept), 'the whole window, no reset');

    const tooOld = await subscribe(gamma, { lastEventId: newest - 7 });
    await tooOld.waitFor((event) => Number(event.id) === newest);
    assert.equal(tooOld.events[0].type, 'replay.reset');
    assert.deepEqual(summary(tooOld.events.slice(1)), summary(kept));

    // and the stored window itself stays bounded: pruned every 6 ids (the window, when below 64)
    // down to the window, so it holds at most the window, 6 more, and the last batch stored (a
    // batch is at most the events of one turn here)
    const client = new pg.Client({ connectionString: cluster.backend.databaseUrl! });
    await client.connect();
    const { rows } = await client.query('select count(*)::int as count from events').finally(() => client.end());
    const stored = rows[0].count as number;
    const bound = 6 + 6 + onAlpha.ofTurn(lastTurn).length;
    assert.ok(stored <= bound, `${stored} rows stored for a window of 6 (at most ${bound})`);
  });
});
