/**
 * Child agents (CONTRACT.md §13) through the real server: spawn_agent offered in every dialect,
 * children with their own context and script (the fake provider routes by the first user message),
 * approvals that say which agent asks, a failing child, the agents view during and after the turn,
 * the event order, and usage and telemetry that count every agent.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeRequest } from '../support/fake-provider.ts';
import type { EventRecorder } from '../support/events.ts';
import { useFakeServer } from '../support/harness.ts';

const spawn = (callId: string, label: string, prompt: string) => ({ name: 'spawn_agent', arguments: JSON.stringify({ label, prompt }), callId });
const shell = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });
const MODELS = { 'fake-responses': 'openai-responses', 'fake-anthropic': 'anthropic-messages', 'fake-chat': 'openai-chat' } as const;

/** The tool names a request offered, in any dialect. */
function offeredTools(request: FakeRequest): string[] {
  return (request.body.tools ?? []).map((tool: any) => tool.name ?? tool.function?.name);
}

/** The requests whose first user message carries `marker`. */
function requestsOf(fake: FakeProvider, marker: string): FakeRequest[] {
  return fake.requests.filter((request) => {
    const messages: any[] = request.body?.input ?? request.body?.messages ?? [];
    return JSON.stringify(messages.find((message) => message.role === 'user')?.content ?? '').includes(marker);
  });
}

for (const backend of BACKENDS) {
  describe(`child agents on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    let events!: EventRecorder;
    const harness = useFakeServer({ backend, confinement: 'off', captureLogs: true });
    before(() => ({ fake, server, events } = harness));

    for (const [model, dialect] of Object.entries(MODELS)) {
      it(`${dialect}: a parent spawns two children, one asks for approval and one fails`, async () => {
        const tag = `${backend}-${dialect}`;
        const session = await harness.newSession({ model });
        fake.route(`MAIN-${tag}`,
          { kind: 'reply', toolCalls: [spawn(`call_w_${tag}`, 'writer', `WRITER-${tag}: create child.txt`), spawn(`call_b_${tag}`, 'broken', `BROKEN-${tag}: do it`)] },
          { kind: 'reply', text: 'Both agents reported.' },
        );
        fake.route(`WRITER-${tag}`, { kind: 'reply', toolCalls: [shell(`call_touch_${tag}`, ['touch', `child-${tag}.txt`])] }, { kind: 'reply', text: 'I wrote the file.' });
        fake.route(`BROKEN-${tag}`, { kind: 'http-error', status: 400 });
        const turn = await harness.submit(session.id, `MAIN-${tag}: delegate`);

        const request = await harness.nthRequestOf(turn.id, 1);
        assert.equal(request.kind, 'tool_approval');
        assert.match(request.prompt, /^Agent "writer" asks:/, 'the request says which agent asks');
        assert.match(request.prompt, /touch child-/);
        assert.equal(request.turnId, turn.id, 'an ordinary human request of the turn');
        assert.equal(existsSync(join(server.workspace, `child-${tag}.txt`)), false, 'nothing runs before the approval');

        const during = await server.request('GET', `/v1/turns/${turn.id}/agents`);
        assert.equal(during.status, 200);
        const writerDuring = during.json.data.find((agent: any) => agent.path === 'writer');
        assert.equal(writerDuring.status, 'running');
        assert.equal(writerDuring.model, model);
        assert.deepEqual(writerDuring.steps.at(-1), { state: 'running', title: 'shell', detail: JSON.stringify({ command: ['touch', `child-${tag}.txt`] }) });

        assert.equal((await harness.resolve(request.id, { decision: 'allow_once' })).status, 200);
        const done = await waitForTurn(server, turn.id);
        assert.equal(done.status, 'completed');
        assert.equal(existsSync(join(server.workspace, `child-${tag}.txt`)), true);

        // the parent reads each child's final text (or its failure) as the call's output
        assert.equal(childOutputOf(fake, `MAIN-${tag}`, `call_w_${tag}`), 'I wrote the file.');
        assert.match(childOutputOf(fake, `MAIN-${tag}`, `call_b_${tag}`), /^The agent "broken" failed: provider_error/);

        // every dialect offers spawn_agent; a child's context is its prompt alone
        for (const sent of requestsOf(fake, tag)) assert.ok(offeredTools(sent).includes('spawn_agent'), offeredTools(sent).join(','));
        const [writerFirst] = requestsOf(fake, `WRITER-${tag}`);
        assert.doesNotMatch(JSON.stringify(writerFirst!.body), new RegExp(`MAIN-${tag}`), 'the parent transcript stays out of the child');

        const after = (await server.request('GET', `/v1/turns/${turn.id}/agents`)).json.data;
        assert.deepEqual(after.map((agent: any) => [agent.path, agent.status, agent.model]), [['writer', 'completed', model], ['broken', 'failed', model]]);
        const writer = after[0];
        assert.deepEqual(writer.steps.map((step: any) => [step.state, step.title]), [['completed', 'model step (1 tool call)'], ['completed', 'shell'], ['completed', 'model step']]);
        assert.equal(writer.steps.at(-1).detail, 'I wrote the file.');
        assert.deepEqual(after[1].steps.map((step: any) => [step.state, step.title]), [['failed', 'agent failed']]);

        // events: started before output before finished, each with the turn's id; no parent for children of the main agent
        const ofTurn = events.ofTurn(turn.id);
        const started = ofTurn.filter((event) => event.type === 'agent.started').map((event) => event.data.data);
        assert.deepEqual(started.map((data) => [data.label, data.parentId, data.model]).sort(), [['broken', null, model], ['writer', null, model]]);
        const writerId = started.find((data) => data.label === 'writer').agentId;
        const brokenId = started.find((data) => data.label === 'broken').agentId;
        const writerEvents = ofTurn.filter((event) => event.type.startsWith('agent.') && event.data.data?.agentId === writerId).map((event) => event.type);
        assert.equal(writerEvents[0], 'agent.started');
        assert.equal(writerEvents.at(-1), 'agent.finished');
        assert.ok(writerEvents.includes('agent.output'));
        const output = ofTurn.filter((event) => event.type === 'agent.output' && event.data.data.agentId === writerId).map((event) => event.data.data.output).join('');
        assert.equal(output, 'I wrote the file.');
        const finished = ofTurn.filter((event) => event.type === 'agent.finished').map((event) => [event.data.data.agentId, event.data.data.status]);
        assert.deepEqual(finished.sort(), [[brokenId, 'failed'], [writerId, 'completed']].sort());
        const types = ofTurn.map((event) => event.type);
        assert.ok(types.lastIndexOf('agent.finished') < types.indexOf('agent.turn.finished'), 'children end before the main agent');

        // usage and telemetry count the main agent (2 requests) and the writer (2); the failed child completed none
        const history = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json.data.at(-1).turn;
        assert.deepEqual(history.usage, { input: 40, output: 20, cached: 0 });
        assert.deepEqual((await server.request('GET', `/v1/sessions/${session.id}`)).json.usage, { input: 40, output: 20, cached: 0 });
        assert.deepEqual(history.providerTelemetry.map((entry: any) => entry.provider_turns), [2, 2], 'main first, then the writer');
        for (const entry of history.providerTelemetry) assert.equal(entry.models[`fake-${dialect}-model`].canonical_model, model);
        const logs = server.logs().join('\n');
        assert.ok(logs.length > 0);
        for (const secret of [`WRITER-${tag}`, 'I wrote the file.', `MAIN-${tag}`]) assert.ok(!logs.includes(secret), `no prompt or agent output in the logs: ${secret}`);
      });
    }

    it('a single-agent turn has one telemetry entry; a failed turn with no completed request has []', async () => {
      const session = await harness.newSession();
      fake.route('SINGLE', { kind: 'reply', text: 'alone' });
      const single = await harness.submit(session.id, 'SINGLE turn');
      assert.equal((await waitForTurn(server, single.id)).status, 'completed');
      const other = await harness.newSession();
      fake.route('FAILING', { kind: 'http-error', status: 400 });
      const failing = await harness.submit(other.id, 'FAILING turn');
      assert.equal((await waitForTurn(server, failing.id)).status, 'failed');
      const [single0] = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json.data;
      assert.equal(single0.turn.providerTelemetry.length, 1);
      assert.equal(single0.turn.providerTelemetry[0].provider_turns, 1);
      const [failed0] = (await server.request('GET', `/v1/sessions/${other.id}/history`)).json.data;
      assert.deepEqual(failed0.turn.providerTelemetry, []);
      assert.deepEqual((await server.request('GET', `/v1/turns/${single.id}/agents`)).json, { data: [] });
    });

    it('children nest at most three levels deep; the fourth level is refused with an error output', async () => {
      const session = await harness.newSession();
      fake.route('DEPTH-MAIN', { kind: 'reply', toolCalls: [spawn('call_d1', 'one', 'DEPTH-1 go')] }, { kind: 'reply', text: 'top' });
      fake.route('DEPTH-1', { kind: 'reply', toolCalls: [spawn('call_d2', 'two', 'DEPTH-2 go')] }, { kind: 'reply', text: 'one done' });
      fake.route('DEPTH-2', { kind: 'reply', toolCalls: [spawn('call_d3', 'three', 'DEPTH-3 go')] }, { kind: 'reply', text: 'two done' });
      fake.route('DEPTH-3', { kind: 'reply', toolCalls: [spawn('call_d4', 'four', 'DEPTH-4 go')] }, { kind: 'reply', text: 'three done' });
      const turn = await harness.submit(session.id, 'DEPTH-MAIN nest');
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      assert.match(childOutputOf(fake, 'DEPTH-3', 'call_d4'), /at most 3 levels deep/);
      assert.equal(requestsOf(fake, 'DEPTH-4').length, 0, 'the fourth level never ran');
      const agents = (await server.request('GET', `/v1/turns/${turn.id}/agents`)).json.data;
      assert.deepEqual(agents.map((agent: any) => agent.path), ['one', 'one/two', 'one/two/three']);
      const started = events.ofTurn(turn.id).filter((event) => event.type === 'agent.started').map((event) => event.data.data);
      assert.equal(started[0].parentId, null);
      assert.equal(started[1].parentId, started[0].agentId);
      assert.equal(started[2].parentId, started[1].agentId);
      assert.equal(childOutputOf(fake, 'DEPTH-MAIN', 'call_d1'), 'one done');
    });

    it('at most 100 agents per turn: the 101st call fails with an error output; the view keeps to its budget', async () => {
      const session = await harness.newSession();
      const calls = Array.from({ length: 101 }, (_, index) => spawn(`call_many_${index}`, `worker-${index}`, `MANY-${index}: answer at length`));
      fake.route('MANY-MAIN', { kind: 'reply', toolCalls: calls }, { kind: 'reply', text: 'collected' });
      for (let index = 0; index < 101; index++) fake.route(`MANY-${index}:`, { kind: 'reply', text: `${index} `.repeat(750) });
      const turn = await harness.submit(session.id, 'MANY-MAIN fan out');
      assert.equal((await waitForTurn(server, turn.id, 60_000)).status, 'completed');
      assert.match(childOutputOf(fake, 'MANY-MAIN', 'call_many_100'), /at most 100 agents/);
      // counted at the provider: each child that started asked the model once (the event stream of a
      // loaded machine may drop deltas, and with them a start event, to a slow test reader)
      const childrenAsked = Array.from({ length: 101 }, (_, index) => requestsOf(fake, `MANY-${index}:`).length > 0);
      assert.equal(childrenAsked.filter(Boolean).length, 100);
      assert.equal(childrenAsked[100], false, 'the 101st never started');

      const body = (await server.request('GET', `/v1/turns/${turn.id}/agents`)).json;
      // 100 answers of about 1,500 characters overrun the 64 Ki budget: the list is cut and says so
      assert.ok(body.data.length < 100 && body.data.length > 10, `${body.data.length} agents`);
      assert.ok(body.data.some((agent: any) => agent.projectionTruncated === true) || body.data.at(-1).steps.length === 0 || body.data.length < 100);
      const textChars = JSON.stringify(body.data).length;
      assert.ok(textChars < 65_536 + 20_000, `${textChars} characters`);
      assert.deepEqual(body.data[0].path, 'worker-0');
    });
  });
}

/** The output of `callId` as the conversation marked by `marker` last sent it to the model, in any dialect. */
function childOutputOf(fake: FakeProvider, marker: string, callId: string): string {
  for (const request of requestsOf(fake, marker).reverse()) {
    const items: any[] = request.body.input ?? request.body.messages ?? [];
    for (const item of items) {
      if (item.call_id === callId && String(item.type).endsWith('_output')) return String(item.output);
      if (item.role === 'tool' && item.tool_call_id === callId) return String(item.content);
      if (Array.isArray(item.content)) {
        for (const block of item.content) {
          if (block.type === 'tool_result' && block.tool_use_id === callId) return typeof block.content === 'string' ? block.content : block.content.map((part: any) => part.text).join('');
        }
      }
    }
  }
  throw new Error(`no output of ${callId} was sent in the ${marker} conversation`);
}
