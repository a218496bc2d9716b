// CONTRACT.md §18, issue 30 item 2: the queue is the cluster's, running capacity each instance's.
// A turn queued on a busy instance is started by an instance with a free running slot, the oldest
// first, under the fencing scheme (its attempt grows, its former holder stores nothing of it), and
// none moves while no instance has room. Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import { useTestCluster } from '../support/cluster.ts';

describe('queued turns start where there is room', () => {
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '10', '--max-concurrent-turns', '1', '--max-queued-turns', '4']);
  const { start, turnOn, statusOn, ended } = cluster;
  const submit = async (agentd: AgentdProcess, input: string) => {
    const session = (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
    return (await http('POST', `${agentd.url}/v1/sessions/${session.id}/turns`, { body: { input } })).json;
  };
  const requestsOf = (marker: string) => cluster.fake.requests.filter((request) => request.dialect && JSON.stringify(request.body).includes(marker));

  it('a turn queued on busy alpha starts on beta once beta has a free slot, the oldest first', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    for (const marker of ['QUEUE-ALPHA-HOLD', 'QUEUE-BETA-HOLD', 'QUEUE-OLDER']) cluster.fake.route(marker, { kind: 'hang' });
    const alphaHold = await submit(alpha, 'QUEUE-ALPHA-HOLD: take alpha\'s slot');
    const betaHold = await submit(beta, 'QUEUE-BETA-HOLD: take beta\'s slot');
    await statusOn(beta, alphaHold.id, 'running');
    await statusOn(alpha, betaHold.id, 'running');
    const older = await submit(alpha, 'QUEUE-OLDER: wait for a slot');
    const newer = await submit(alpha, 'QUEUE-NEWER: wait behind it');
    assert.deepEqual([older.status, newer.status], ['queued', 'queued']);

    // no instance has room: nothing moves
    await delay(1500);
    for (const turn of [older, newer]) assert.deepEqual([(await turnOn(beta, turn.id)).status, (await turnOn(beta, turn.id)).attempt], ['queued', 1]);

    // beta's slot frees: the oldest queued turn starts there, under a new attempt; the newer waits
    await http('POST', `${alpha.url}/v1/turns/${betaHold.id}/cancel`);
    const started = performance.now();
    await statusOn(beta, older.id, 'running');
    const movedMs = Math.round(performance.now() - started);
    for (const agentd of [beta, alpha]) {
      const seen = await turnOn(agentd, older.id);
      assert.deepEqual([seen.status, seen.attempt], ['running', 2], 'taken from alpha under a new attempt, as alpha too answers at once');
    }
    await delay(800);
    assert.deepEqual([(await turnOn(beta, newer.id)).status, (await turnOn(alpha, newer.id)).status], ['queued', 'queued'], 'beta is full again: the newer waits');

    // alpha's slot frees: alpha starts its own queued turn
    await http('POST', `${beta.url}/v1/turns/${alphaHold.id}/cancel`);
    const newerEnd = await ended(beta, newer.id);
    assert.deepEqual([newerEnd.status, newerEnd.attempt], ['completed', 1]);

    // the moved turn is cancelled from alpha, which admitted it; it ran once
    const cancelled = (await http('POST', `${alpha.url}/v1/turns/${older.id}/cancel`)).json;
    assert.deepEqual([cancelled.status, cancelled.attempt], ['cancelled', 2]);
    assert.equal(requestsOf('QUEUE-OLDER').length, 1, 'one model request: alpha never started it');
    console.log(`the queued turn started on beta ${movedMs} ms after beta's slot freed`);
  });

  it('first come first served across instances: alpha\'s freed slot goes to the turn queued on beta before alpha\'s own', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    for (const marker of ['FIFO-ALPHA-HOLD', 'FIFO-BETA-HOLD']) cluster.fake.route(marker, { kind: 'hang' });
    const alphaHold = await submit(alpha, 'FIFO-ALPHA-HOLD: take alpha\'s slot');
    const betaHold = await submit(beta, 'FIFO-BETA-HOLD: take beta\'s slot');
    await statusOn(beta, alphaHold.id, 'running');
    await statusOn(alpha, betaHold.id, 'running');
    const older = await submit(beta, 'FIFO-OLDER: queued first, on beta');
    const newer = await submit(alpha, 'FIFO-NEWER: queued second, on alpha');
    assert.deepEqual([older.status, newer.status], ['queued', 'queued']);
    // a turn moves once it has waited a second (a just-admitted one is usually starting where it was admitted)
    await delay(1200);

    await http('POST', `${beta.url}/v1/turns/${alphaHold.id}/cancel`);
    const [olderEnd, newerEnd] = [await ended(alpha, older.id), await ended(alpha, newer.id)];
    assert.deepEqual([olderEnd.status, olderEnd.attempt, newerEnd.status, newerEnd.attempt], ['completed', 2, 'completed', 1]);
    assert.ok(olderEnd.finishedAt <= newerEnd.startedAt, `the older ran first (ended ${olderEnd.finishedAt}, the newer started ${newerEnd.startedAt})`);
    await http('POST', `${alpha.url}/v1/turns/${betaHold.id}/cancel`);
  });
});
