// Issue 40 item 6: every end is announced. A turn ended without its owner (the owner killed, then a
// cancel through another instance, or the sweep of a turn marked cancelled) reaches the
// subscribers of every instance as `turn.cancelled`, once, and gets its history entry, once, as a
// turn its owner ended does. Real processes on a real PostgreSQL.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import type { EventRecorder } from '../support/events.ts';
import { until, useTestCluster } from '../support/cluster.ts';

/** Long enough that no lease is lost to a loaded machine's pauses (docs/CLUSTER.md), short enough to wait out. */
const LEASE_SECONDS = 3;
const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('a turn ended without its owner is announced on every instance and kept in history', () => {
  const cluster = useTestCluster(() => ['--turn-lease-seconds', String(LEASE_SECONDS)]);
  const { start, subscribe } = cluster;

  /** alpha's turn waiting for an approval, beta and gamma subscribed, then alpha killed. */
  const orphanedWaitingTurn = async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const gamma = await start('gamma');
    const recorders = [await subscribe(beta), await subscribe(gamma)];
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const marker = `orphan ${session.id}`;
    cluster.fake.route(marker, { kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'never.txt'])] });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: marker } })).json;
    await cluster.statusOn(beta, turn.id, 'waiting_for_input');
    await alpha.kill();
    return { beta, gamma, recorders, session, turn, marker };
  };

  const assertAnnouncedOnce = async (recorders: EventRecorder[], others: AgentdProcess[], sessionId: string, turnId: string, marker: string) => {
    for (const recorder of recorders) await recorder.waitForType('turn.cancelled', turnId, 30_000);
    // the history is read after the end: nothing can add a second entry later (the row is ended)
    for (const agentd of others) {
      const history = (await http('GET', `${agentd.url}/v1/sessions/${sessionId}/history`)).json.data;
      const entries = history.filter((entry: any) => entry.turn.userText === marker);
      assert.equal(entries.length, 1, JSON.stringify(history));
      assert.equal(entries[0].turn.error, 'cancelled');
    }
    // a later event of each stream shows nothing more of the turn followed
    const after = (await http('POST', `${others[0]!.url}/v1/sessions`, { body: {} })).json;
    for (const recorder of recorders) {
      await recorder.waitFor((event) => event.type === 'session.created' && event.data?.sessionId === after.id, 30_000);
      assert.equal(recorder.ofTurn(turnId).filter((event) => event.type === 'turn.cancelled').length, 1);
    }
  };

  it('a cancel through another instance of a turn whose owner is gone', async () => {
    const { beta, gamma, recorders, session, turn, marker } = await orphanedWaitingTurn();
    const cancelled = await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`);
    assert.deepEqual([cancelled.status, cancelled.json.status, cancelled.json.attempt], [200, 'cancelled', 2]);
    await assertAnnouncedOnce(recorders, [beta, gamma], session.id, turn.id, marker);
  });

  it('the sweep of a turn marked cancelled whose owner is gone', async () => {
    const { beta, gamma, recorders, session, turn, marker } = await orphanedWaitingTurn();
    // the mark a cancel leaves when the instance that took it stops before ending the turn
    const client = new pg.Client({ connectionString: cluster.backend.databaseUrl! });
    await client.connect();
    try {
      await client.query('update turns set cancel_requested_at = $1 where id = $2', [new Date().toISOString(), turn.id]);
    } finally {
      await client.end();
    }
    const ended = await cluster.ended(beta, turn.id);
    assert.deepEqual([ended.status, ended.attempt], ['cancelled', 2]);
    await assertAnnouncedOnce(recorders, [beta, gamma], session.id, turn.id, marker);
  });
});
