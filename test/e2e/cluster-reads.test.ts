// CONTRACT.md §18, issue 30 item 2 (in part): with --cluster, an instance that does not run a turn
// answers its status as the owner holds it (running, waiting_for_input), and one active turn per
// session holds across instances: a second turn of a busy session is refused on every instance.
// Real processes on a real PostgreSQL, the fake provider.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { http } from '../support/http.ts';
import { startAgentd, type AgentdProcess } from '../support/agentd-process.ts';
import { clusterArguments, until } from '../support/cluster.ts';

const TERMINAL = ['completed', 'failed', 'cancelled'];

const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('reads and the one-active-turn limit across instances of a cluster', () => {
  let backend: TestBackend;
  let fake: FakeProvider;
  let args: string[];
  const running: AgentdProcess[] = [];
  before(async () => {
    backend = await createBackend('postgres');
    fake = await startFakeProvider();
    // a lease no loaded machine loses: this test is not about takeover
    args = [...clusterArguments(backend, fake.baseUrl), '--turn-lease-seconds', '10'];
  });
  afterEach(async () => {
    for (const agentd of running.splice(0)) await agentd.kill();
  });
  after(async () => {
    await fake.close();
    await backend.drop();
  });
  const start = async (instanceId: string) => {
    const agentd = await startAgentd([...args, '--instance-id', instanceId]);
    running.push(agentd);
    return agentd;
  };
  const turnOn = async (agentd: AgentdProcess, id: string) => (await http('GET', `${agentd.url}/v1/turns/${id}`)).json;
  const statusOn = (agentd: AgentdProcess, id: string, status: string) =>
    until(`${status} on ${agentd.url}`, async () => ((await turnOn(agentd, id)).status === status ? true : undefined));

  it('beta answers alpha\'s turn as running and waiting, and refuses a second turn of its session', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'reads.txt'])] }, { kind: 'hang', afterText: 'thinking' });
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

    const cancelled = (await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`)).json;
    assert.equal(cancelled.status, 'cancelled');
    // the session is free on every instance
    fake.enqueue({ kind: 'reply', text: 'next' });
    const next = await http('POST', `${beta.url}/v1/sessions/${session.id}/turns`, { body: { input: 'now me' } });
    assert.equal(next.status, 202);
    const done = await until('the next turn', async () => {
      const now = await turnOn(alpha, next.json.id);
      return TERMINAL.includes(now.status) ? now : undefined;
    });
    assert.equal(done.status, 'completed');
  });
});
