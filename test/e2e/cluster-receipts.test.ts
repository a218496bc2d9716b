// CONTRACT.md §18, §20: a turn's change receipt survives a takeover. Each step of tool results
// carries the receipt as it stood, the instance that takes the turn over goes on from it, and the
// turn's receipt lists what its calls changed under every attempt; a revert takes all of it back.
// Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { http } from '../support/http.ts';
import { until, useTestCluster } from '../support/cluster.ts';

const shellCall = (callId: string, script: string) => ({ name: 'shell', arguments: JSON.stringify({ command: ['sh', '-c', script] }), callId });

describe('a change receipt across a takeover', () => {
  // 4 s: no lease lost to a loaded machine's pauses (docs/CLUSTER.md), short enough to wait out
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '4', '--yolo']);
  const { start, turnOn, ended } = cluster;

  it('the files the first attempt created are in the receipt the second attempt ends with, and the revert removes them', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    // a first turn loads alpha's provider and tool modules, a pause that must not fall in the test's lease
    const warm = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.route('RECEIPT-WARM', { kind: 'reply', text: 'warm' });
    await ended(alpha, (await http('POST', `${alpha.url}/v1/sessions/${warm.id}/turns`, { body: { input: 'RECEIPT-WARM' } })).json.id);

    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const file = (name: string) => join(cluster.workspace, name);
    cluster.fake.route(
      'RECEIPT-TAKEOVER',
      { kind: 'reply', toolCalls: [shellCall('call_first', 'echo one > receipt-first.txt')] },
      { kind: 'reply', toolCalls: [shellCall('call_hold', 'touch receipt-holding.flag; sleep 120')] },
      { kind: 'reply', toolCalls: [shellCall('call_second', 'echo two > receipt-second.txt')] },
      { kind: 'reply', text: 'both written' },
    );
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'RECEIPT-TAKEOVER: write two files' } })).json;
    await until('alpha to run the second call', async () => (existsSync(file('receipt-holding.flag')) ? true : undefined));

    await alpha.kill();
    const done = await ended(beta, turn.id, 45_000);
    assert.deepEqual([done.status, done.attempt], ['completed', 2]);
    const result = (await http('GET', `${beta.url}/v1/turns/${turn.id}/result`)).json;
    const listed = result.output.changes.map((change: any) => `${change.kind} ${change.path}`);
    assert.ok(listed.includes('created receipt-first.txt'), `the first attempt's change is listed: ${listed}`);
    assert.ok(listed.includes('created receipt-second.txt'), `the second attempt's change is listed: ${listed}`);

    const reverted = await http('POST', `${beta.url}/v1/turns/${turn.id}/revert`);
    assert.equal(reverted.status, 200, reverted.text);
    assert.ok(reverted.json.reverted.includes('receipt-first.txt') && reverted.json.reverted.includes('receipt-second.txt'), reverted.text);
    assert.deepEqual([existsSync(file('receipt-first.txt')), existsSync(file('receipt-second.txt'))], [false, false]);
    assert.equal((await turnOn(beta, turn.id)).status, 'completed');
  });
});
