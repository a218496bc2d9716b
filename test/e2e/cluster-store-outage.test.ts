// A turn of a cluster whose database stops answering for a moment is resumed, not failed
// (runtime/turn/cluster-claims.ts, whileRunning): the step the run could not journal stops the run
// as a lost claim does, its end is left alone, and once the database answers the next sweep (this
// very instance's) takes the turn up again from its journal. Before, the turn ended `failed` with
// the driver's message. A real PostgreSQL behind a loopback proxy that goes down and up again.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { http } from '../support/http.ts';
import { until, useTestCluster } from '../support/cluster.ts';
import { startFreezableProxy, type FreezableProxy } from '../support/freezable-proxy.ts';

const LEASE_SECONDS = 3;

describe('a cluster\'s database gone for a moment under a running turn', () => {
  const cluster = useTestCluster();
  let proxy: FreezableProxy;
  before(async () => {
    proxy = await startFreezableProxy();
  });
  after(() => proxy.close());

  it('the turn is let go as its step cannot be journalled, and resumed once the database answers', async () => {
    const alpha = await cluster.start('alpha', ['--yolo', '--turn-lease-seconds', String(LEASE_SECONDS), '--database-url', proxy.urlFor(cluster.backend.databaseUrl!)]);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const marker = `outage-${session.id}`;
    cluster.fake.route(
      marker,
      // the answer comes while the database is down: the step that records it cannot be stored
      { kind: 'slow-first-byte', delayMs: 1_000, toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['true'] }), callId: 'call_during_outage' }] },
      { kind: 'reply', text: 'finished after the outage' },
    );
    const asked = cluster.fake.requests.length;
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: `${marker}: go on through an outage` } })).json;
    await cluster.fake.waitForRequests(asked + 1);

    proxy.setDown(true);
    // what alpha makes of the step it could not store: let the turn go (or, before, fail it)
    await until('alpha to meet the outage', async () => (/the database could not be reached for the turn|"turn failed"/.test(alpha.stdout()) ? true : undefined));
    proxy.setDown(false);

    const ended = await cluster.ended(alpha, turn.id, 30_000);
    assert.deepEqual([ended.status, ended.attempt, ended.error ?? null], ['completed', 2, null], JSON.stringify(ended));
    const result = (await http('GET', `${alpha.url}/v1/turns/${turn.id}/result`)).json;
    assert.equal(result.output.assistantText, 'finished after the outage');
    assert.match(alpha.stdout(), /the database could not be reached for the turn: its lease is left for the next sweep to resume it/);
    assert.doesNotMatch(alpha.stdout(), /"turn failed"/);
  });
});
