// CONTRACT.md §18, issue 30 item 2: the limits and reads a lone server keeps in memory hold across
// the instances of a cluster. The queue limit is counted in the database; a session whose turn is
// active on one instance cannot be renamed, deleted or forked on another (409 session_busy); and
// what an instance would keep in memory of sessions (rows, read bodies, model contexts) never hides
// another instance's writes. Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import { until, useTestCluster } from '../support/cluster.ts';

describe('limits and reads across the instances of a cluster', () => {
  // a lease no loaded machine loses: this test is not about takeover
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '10']);
  const { start, turnOn, statusOn, ended } = cluster;
  const newSession = async (agentd: AgentdProcess) => (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
  const submit = async (agentd: AgentdProcess, sessionId: string, input: string) =>
    (await http('POST', `${agentd.url}/v1/sessions/${sessionId}/turns`, { body: { input } })).json;

  it('the queue limit is counted across instances: a turn on beta finds alpha\'s queued turn and the queue full', async () => {
    const limits = ['--max-concurrent-turns', '1', '--max-queued-turns', '1'];
    const alpha = await start('alpha', limits);
    const beta = await start('beta', limits);
    cluster.fake.route('LIMITS-ALPHA-SLOT', { kind: 'hang', afterText: 'working' });
    cluster.fake.route('LIMITS-BETA-SLOT', { kind: 'hang', afterText: 'working' });
    const busy = await submit(alpha, (await newSession(alpha)).id, 'LIMITS-ALPHA-SLOT: take the only slot');
    await statusOn(beta, busy.id, 'running');
    // beta's slot is taken too, or beta would start alpha's queued turn (cluster-queue.test.ts)
    const betaBusy = await submit(beta, (await newSession(beta)).id, 'LIMITS-BETA-SLOT: take beta\'s slot');
    await statusOn(alpha, betaBusy.id, 'running');
    const queued = await submit(alpha, (await newSession(alpha)).id, 'wait for the slot');
    assert.equal(queued.status, 'queued');

    // beta queues nothing, but the cluster's queue holds one turn: full
    const refused = await submit(beta, (await newSession(beta)).id, 'me too');
    assert.equal(refused.status, 'failed');
    assert.match(refused.error, /^turn_queue_full/);
    assert.equal((await turnOn(alpha, refused.id)).status, 'failed', 'stored as failed, seen on alpha');

    // once the queue empties, beta admits again
    await http('POST', `${beta.url}/v1/turns/${queued.id}/cancel`);
    await http('POST', `${beta.url}/v1/turns/${busy.id}/cancel`);
    await http('POST', `${alpha.url}/v1/turns/${betaBusy.id}/cancel`);
    const next = await submit(beta, (await newSession(beta)).id, 'now there is room');
    assert.equal(next.status, 'queued');
    assert.equal((await ended(beta, next.id)).status, 'completed');
  });

  it('a session whose turn runs on alpha cannot be renamed, deleted or forked on beta; afterwards it can', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = await newSession(alpha);
    // its own script: a cancel before its model request must not leave the hang queued for the next test
    cluster.fake.route('LIMITS-HOLD', { kind: 'hang', afterText: 'working' });
    const turn = await submit(alpha, session.id, 'LIMITS-HOLD: hold the session');
    await statusOn(beta, turn.id, 'running');

    const attempts = [
      await http('PATCH', `${beta.url}/v1/sessions/${session.id}`, { body: { title: 'renamed elsewhere' } }),
      await http('DELETE', `${beta.url}/v1/sessions/${session.id}`),
      await http('POST', `${beta.url}/v1/sessions/${session.id}/fork`, { body: {} }),
    ];
    assert.deepEqual(attempts.map((answer) => [answer.status, answer.json?.error?.code]), [[409, 'session_busy'], [409, 'session_busy'], [409, 'session_busy']]);
    assert.equal((await http('GET', `${beta.url}/v1/sessions/${session.id}`)).json.title, session.title, 'nothing changed');

    await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`);
    const renamed = await http('PATCH', `${beta.url}/v1/sessions/${session.id}`, { body: { title: 'renamed elsewhere' } });
    assert.equal(renamed.status, 200);
    assert.equal((await http('DELETE', `${beta.url}/v1/sessions/${session.id}`)).status, 204);
  });

  it('the agents view of a turn on alpha answers on beta, while the child runs and after the turn', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = await newSession(alpha);
    cluster.fake.route('PARENT-cluster', { kind: 'reply', toolCalls: [{ name: 'spawn_agent', arguments: JSON.stringify({ label: 'helper', prompt: 'CHILD-cluster: look' }), callId: 'call_child' }] }, { kind: 'reply', text: 'the helper reported' });
    cluster.fake.route('CHILD-cluster', { kind: 'hang', afterText: 'looking' });
    const turn = await submit(alpha, session.id, 'PARENT-cluster: delegate');
    const agentsOn = async (agentd: AgentdProcess) => (await http('GET', `${agentd.url}/v1/turns/${turn.id}/agents`)).json.data;

    const during = await until('the running child seen on beta', async () => {
      const agents = await agentsOn(beta);
      return agents.length === 1 ? agents : undefined;
    });
    assert.deepEqual([during[0].path, during[0].status], ['helper', 'running']);

    await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`);
    await ended(beta, turn.id);
    const onAlpha = await agentsOn(alpha);
    assert.equal(onAlpha[0].status, 'cancelled');
    const onBeta = await until('the final view on beta', async () => {
      const agents = await agentsOn(beta);
      return agents[0]?.status === 'cancelled' ? agents : undefined;
    });
    assert.deepEqual(onBeta, onAlpha);

    // a turn that started no child agent: an empty view on both
    cluster.fake.enqueue({ kind: 'reply', text: 'alone' });
    const single = await submit(alpha, session.id, 'no helpers');
    await ended(beta, single.id);
    for (const agentd of [alpha, beta]) assert.deepEqual((await http('GET', `${agentd.url}/v1/turns/${single.id}/agents`)).json, { data: [] });
  });

  it('what beta read of a session never hides alpha\'s writes: its record, and its history in the next model request', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = await newSession(beta);
    // beta reads the session twice (a second read could come from memory) and runs its first turn
    await http('GET', `${beta.url}/v1/sessions/${session.id}`);
    assert.equal((await http('GET', `${beta.url}/v1/sessions/${session.id}`)).json.title, session.title);
    cluster.fake.enqueue({ kind: 'reply', text: 'first answer' });
    await ended(beta, (await submit(beta, session.id, 'first question')).id);

    // alpha renames it and runs its second turn
    assert.equal((await http('PATCH', `${alpha.url}/v1/sessions/${session.id}`, { body: { title: 'named on alpha' } })).status, 200);
    cluster.fake.enqueue({ kind: 'reply', text: 'second answer' });
    await ended(alpha, (await submit(alpha, session.id, 'second question')).id);

    const seen = (await http('GET', `${beta.url}/v1/sessions/${session.id}`)).json;
    assert.equal(seen.title, 'named on alpha');
    assert.equal(seen.usage.input, 20, 'both turns\' usage');

    // beta's third turn sends the model the whole conversation, alpha's turn included
    const before = cluster.fake.requests.length;
    cluster.fake.enqueue({ kind: 'reply', text: 'third answer' });
    await ended(beta, (await submit(beta, session.id, 'third question')).id);
    const body = JSON.stringify(cluster.fake.requests.slice(before).at(-1)!.body);
    for (const text of ['first question', 'second question', 'second answer', 'third question']) assert.ok(body.includes(text), `the request carries "${text}"`);
  });
});
