// A turn of a cluster whose database stops answering for a moment is resumed, not failed
// (runtime/turn/cluster-claims.ts, whileRunning): the step the run could not journal, or the human
// request it could not store, stops the run as a lost claim does, its end is left alone, and once
// the database answers the next sweep (this very instance's) takes the turn up again from its
// journal. Before, the turn ended `failed` with the driver's message. A real PostgreSQL behind a
// loopback proxy that goes down and up again.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { http } from '../support/http.ts';
import { until, useTestCluster } from '../support/cluster.ts';
import { startFreezableProxy, type FreezableProxy } from '../support/freezable-proxy.ts';

const LEASE_SECONDS = 3;
const LET_GO = /the database could not be reached for the turn: its lease is left for the next sweep to resume it/;
/** What alpha makes of the outage: lets the turn go (or, before, fails it). */
const MET_OUTAGE = /the database could not be reached for the turn|"turn failed"/;

describe('a cluster\'s database gone for a moment under a running turn', () => {
  const cluster = useTestCluster();
  let proxy: FreezableProxy;
  before(async () => {
    proxy = await startFreezableProxy();
  });
  after(() => proxy.close());

  const startAlpha = (extra: string[] = []) => cluster.start('alpha', [...extra, '--turn-lease-seconds', String(LEASE_SECONDS), '--database-url', proxy.urlFor(cluster.backend.databaseUrl!)]);

  it('the turn is let go as its step cannot be journalled, and resumed once the database answers', async () => {
    const alpha = await startAlpha(['--yolo']);
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
    await until('alpha to meet the outage', async () => (MET_OUTAGE.test(alpha.stdout()) ? true : undefined));
    proxy.setDown(false);

    const ended = await cluster.ended(alpha, turn.id, 30_000);
    assert.deepEqual([ended.status, ended.attempt, ended.error ?? null], ['completed', 2, null], JSON.stringify(ended));
    const result = (await http('GET', `${alpha.url}/v1/turns/${turn.id}/result`)).json;
    assert.equal(result.output.assistantText, 'finished after the outage');
    assert.match(alpha.stdout(), LET_GO);
    assert.doesNotMatch(alpha.stdout(), /"turn failed"/);
  });

  it('the turn is let go as its approval cannot be stored, and goes on once the database answers, the call reported interrupted', async () => {
    const alpha = await startAlpha();
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const marker = `approval-outage-${session.id}`;
    const written = join(cluster.workspace, `${marker}.txt`);
    cluster.fake.route(
      marker,
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', written] }), callId: 'call_needs_approval' }] },
      { kind: 'reply', text: 'went on without the call' },
    );
    // the step that holds the call is journalled; the database goes away as its approval is stored
    proxy.downAt('insert into "human_requests"');
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: `${marker}: ask before writing` } })).json;
    await until('alpha to meet the outage', async () => (MET_OUTAGE.test(alpha.stdout()) ? true : undefined));
    proxy.setDown(false);

    const ended = await cluster.ended(alpha, turn.id, 30_000);
    assert.deepEqual([ended.status, ended.attempt, ended.error ?? null], ['completed', 2, null], JSON.stringify(ended));
    assert.match(alpha.stdout(), LET_GO);
    assert.doesNotMatch(alpha.stdout(), /"turn failed"/);
    // nobody can tell from the database whether the call started: the resumed turn reports it
    // interrupted to the model, as after a death; it never ran, for nobody approved it
    const last = cluster.fake.requests.filter((request) => JSON.stringify(request.body).includes(marker)).at(-1)!;
    assert.match(JSON.stringify(last.body), /interrupted: the agentd instance running this call stopped/);
    assert.equal(existsSync(written), false);
  });
});
