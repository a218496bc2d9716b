// CONTRACT.md §18, issue 30 item 2 (in part): with --cluster, an instance that does not run a turn
// answers its status as the owner holds it (running, waiting_for_input), and one active turn per
// session holds across instances: a second turn of a busy session is refused on every instance.
// Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { http } from '../support/http.ts';
import { useTestCluster } from '../support/cluster.ts';

const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('reads and the one-active-turn limit across instances of a cluster', () => {
  // a lease no loaded machine loses: this test is not about takeover
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '10']);
  const { start, turnOn, statusOn, ended } = cluster;

  it('beta answers alpha\'s turn as running and waiting, and refuses a second turn of its session', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'reads.txt'])] }, { kind: 'hang', afterText: 'thinking' });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'make a file' } })).json;

    await statusOn(beta, turn.id, 'waiting_for_input');
    const listed = (await http('GET', `${beta.url}/v1/turns?sessionId=${session.id}`)).json.data;
    assert.deepEqual(listed.map((entry: any) => [entry.id, entry.status]), [[turn.id, 'waiting_for_input']]);
    for (const agentd of [beta, alpha]) {
      const second = await http('POST', `${agentd.url}/v1/sessions/${session.id}/turns`, { body: { input: 'me too' } });
      assert.deepEqual([second.status, second.json.error?.code], [409, 'session_busy'], `on ${agentd === alpha ? 'alpha' : 'beta'}`);
    }

    const [request] = (await http('GET', `${beta.url}/v1/requests?turnId=${turn.id}`)).json.data;
    assert.equal((await http('POST', `${beta.url}/v1/requests/${request.id}/resolve`, { body: { decision: 'allow_once' } })).status, 200);
    await statusOn(beta, turn.id, 'running');
    assert.ok((await turnOn(beta, turn.id)).startedAt, 'the stored row carries startedAt');

    // the turn's second request has taken the queued hang: a cancel before it would leave the hang
    // for the next turn, which then never ends (issue 40 item 9: this test's timeout under load)
    await cluster.fake.waitForRequests(2);
    const cancelled = (await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`)).json;
    assert.equal(cancelled.status, 'cancelled');
    // the session is free on every instance
    cluster.fake.enqueue({ kind: 'reply', text: 'next' });
    const next = await http('POST', `${beta.url}/v1/sessions/${session.id}/turns`, { body: { input: 'now me' } });
    assert.equal(next.status, 202);
    assert.equal((await ended(alpha, next.json.id)).status, 'completed');
  });
});
