/**
 * A cancel reaches every child agent and their tool processes (CONTRACT.md §13), and the agents
 * view of a turn this process no longer holds is a 409 `turn_agents_unavailable`.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { fakeProviderModels, startTestServer, waitForTurn } from '../support/server.ts';
import { startFakeProvider } from '../support/fake-provider.ts';
import { EventRecorder } from '../support/events.ts';
import { groupIsAlive, processIsAlive } from '../../src/exec/process-group.ts';

const spawn = (callId: string, label: string, prompt: string) => ({ name: 'spawn_agent', arguments: JSON.stringify({ label, prompt }), callId });
const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

for (const backend of BACKENDS) {
  describe(`cancelling a turn with child agents on ${backend}`, () => {
    const closers: (() => Promise<void>)[] = [];
    after(async () => {
      for (const close of closers.reverse()) await close();
    });

    it('stops every child and kills their tool processes before the cancel answers; a restarted process answers 409 for the view', async () => {
      const fake = await startFakeProvider();
      closers.push(() => fake.close());
      // --yolo runs the children's commands unasked; unconfined so the command prints host pids
      let server = await startTestServer({ backend, models: fakeProviderModels(fake.baseUrl), args: ['--yolo'], confinement: 'off' });
      const events = new EventRecorder(server.url, { lastEventId: 0 });
      await events.opened;
      closers.push(async () => events.close());
      const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      fake.route('CANCEL-MAIN', { kind: 'reply', toolCalls: [spawn('call_a', 'sleeper', 'SLEEPER-A work'), spawn('call_b', 'waiter', 'WAITER-B work')] });
      fake.route('SLEEPER-A', { kind: 'reply', toolCalls: [shell('call_sleep', 'sleep 60 & echo bg=$!; echo leader=$$; sleep 60')] });
      fake.route('WAITER-B', { kind: 'hang' });
      const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'CANCEL-MAIN go' } })).json;

      const streamed = () => events.ofTurn(turn.id).filter((event) => event.type === 'tool.output.updated').map((event) => event.data.data.output).join('');
      await events.waitFor(() => /bg=\d+/.test(streamed()) && /leader=\d+/.test(streamed()));
      const bg = Number(/bg=(\d+)/.exec(streamed())![1]);
      const leader = Number(/leader=(\d+)/.exec(streamed())![1]);
      assert.equal(processIsAlive(bg), true);
      const during = (await server.request('GET', `/v1/turns/${turn.id}/agents`)).json.data;
      assert.deepEqual(during.map((agent: any) => [agent.path, agent.status]).sort(), [['sleeper', 'running'], ['waiter', 'running']]);

      const cancelled = await server.request('POST', `/v1/turns/${turn.id}/cancel`);
      assert.equal(cancelled.json.status, 'cancelled');
      assert.equal(processIsAlive(bg), false, 'the background child of the agent\'s command is gone');
      assert.equal(groupIsAlive(leader), false, 'no process of the group survives');
      const agents = (await server.request('GET', `/v1/turns/${turn.id}/agents`)).json.data;
      assert.deepEqual(agents.map((agent: any) => [agent.path, agent.status]).sort(), [['sleeper', 'cancelled'], ['waiter', 'cancelled']]);
      const finished = events.ofTurn(turn.id).filter((event) => event.type === 'agent.finished').map((event) => event.data.data.status);
      assert.deepEqual(finished, ['cancelled', 'cancelled']);
      const sleeperStep = agents.find((agent: any) => agent.path === 'sleeper').steps.at(-1);
      assert.deepEqual([sleeperStep.state, sleeperStep.title], ['failed', 'shell']);

      // a new process holds nothing of the durable turn
      await server.stop();
      server = await startTestServer({ backend, models: fakeProviderModels(fake.baseUrl), reuse: { backend: server.backend, workspace: server.workspace } });
      closers.push(() => server.close());
      assert.equal((await waitForTurn(server, turn.id)).status, 'cancelled');
      const unavailable = await server.request('GET', `/v1/turns/${turn.id}/agents`);
      assert.equal(unavailable.status, 409);
      assert.equal(unavailable.json.error.code, 'turn_agents_unavailable');
      assert.equal((await server.request('GET', '/v1/turns/00000000-0000-7000-8000-000000000000/agents')).status, 404);
    });
  });
}
