import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { startTestServer, fakeProviderModels, waitForTurn, waitForStatus, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider, type FakeRequest } from '../support/fake-provider.ts';
import { EventRecorder } from '../support/events.ts';
import { toolOutputSent, useFakeServer } from '../support/harness.ts';
import { DENIED_OUTPUT } from '../../src/agent/policy/authorize.ts';
import { groupIsAlive, processIsAlive } from '../../src/exec/process-group.ts';

const shellCall = (callId: string, command: string[] | string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

for (const backend of BACKENDS) {
  describe(`tool approvals through the server on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    let events!: EventRecorder;
    const harness = useFakeServer({ backend });
    before(() => ({ fake, server, events } = harness));
    const { newSession, submit, resolve, nthRequestOf } = harness;

    it('asks before a command that changes things; the turn waits, then runs once allowed', async () => {
      const session = await newSession();
      fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'once.txt'])] }, { kind: 'hang' });
      const turn = await submit(session.id, 'make a file');
      const request = await nthRequestOf(turn.id, 1);
      assert.equal(request.kind, 'tool_approval');
      assert.deepEqual(request.options, ['allow_once', 'allow_session', 'deny']);
      assert.equal(request.turnId, turn.id);
      assert.equal(request.sessionId, session.id);
      assert.match(request.prompt, /"shell"/);
      assert.match(request.prompt, /touch once\.txt/);
      assert.ok(!Number.isNaN(Date.parse(request.createdAt)));
      assert.equal((await server.request('GET', `/v1/turns/${turn.id}`)).json.status, 'waiting_for_input');
      assert.equal(existsSync(join(server.workspace, 'once.txt')), false, 'nothing runs before the approval');

      const listed = await server.request('GET', '/v1/requests');
      assert.deepEqual(listed.json.data.map((entry: any) => entry.id), [request.id]);
      assert.deepEqual(listed.json.data[0], request);
      assert.equal((await server.request('GET', `/v1/requests?turnId=${turn.id.toUpperCase()}`)).json.data.length, 1);
      assert.deepEqual((await server.request('GET', '/v1/requests?turnId=00000000-0000-7000-8000-000000000000')).json.data, []);
      const badFilter = await server.request('GET', '/v1/requests?turnId=not-a-uuid');
      assert.equal(badFilter.status, 400);
      assert.equal(badFilter.json.error.code, 'invalid_query');

      const invalid = await resolve(request.id, { decision: 'allow' });
      assert.equal(invalid.status, 422);
      assert.equal(invalid.json.error.code, 'invalid_decision');
      for (const body of [{ decision: 'allow_once', note: 'extra' }, {}, { decision: 'allow_once', value: 7 }]) {
        const malformed = await resolve(request.id, body);
        assert.equal(malformed.status, 400, JSON.stringify(body));
        assert.equal(malformed.json.error.code, 'invalid_json');
      }
      for (const id of ['00000000-0000-7000-8000-000000000000', 'nope']) {
        const missing = await resolve(id, { decision: 'deny' });
        assert.equal(missing.status, 404);
        assert.equal(missing.json.error.code, 'request_not_found');
      }
      assert.equal((await server.request('GET', `/v1/turns/${turn.id}`)).json.status, 'waiting_for_input', 'a refused decision leaves it pending');

      const resolved = await resolve(request.id.toUpperCase(), { decision: 'allow_once' });
      assert.equal(resolved.status, 200);
      assert.deepEqual(resolved.json, request);
      const again = await resolve(request.id, { decision: 'allow_once' });
      assert.equal(again.status, 409);
      assert.equal(again.json.error.code, 'request_already_resolved');
      const resolvedEvent = await events.waitForType('request.resolved', turn.id);
      assert.deepEqual(resolvedEvent.data.data, { requestId: request.id });

      await events.waitFor((event) => event.type === 'tool.finished' && event.data.data.callId === 'call_touch');
      await waitForStatus(server, turn.id, 'running');
      assert.equal(existsSync(join(server.workspace, 'once.txt')), true);
      assert.deepEqual((await server.request('GET', '/v1/requests')).json.data, []);
      assert.match(toolOutputSent(fake.requests, 'call_touch') ?? '', /Exit code: 0/);
      const types = events.ofTurn(turn.id).map((event) => event.type);
      assert.ok(types.indexOf('tool.updated') < types.indexOf('request.created'));
      assert.ok(types.indexOf('request.resolved') < types.indexOf('tool.finished'));
      assert.equal((await server.request('POST', `/v1/turns/${turn.id}/cancel`)).json.status, 'cancelled');
    });

    it('remembers allow_session for the same command in this turn and the next, and sends a denial to the model', async () => {
      const session = await newSession();
      fake.enqueue(
        { kind: 'reply', toolCalls: [shellCall('call_mkdir_1', ['mkdir', '-p', 'build'])] },
        { kind: 'reply', toolCalls: [shellCall('call_mkdir_2', ['mkdir', '-p', 'build'])] },
        { kind: 'reply', toolCalls: [shellCall('call_touch_x', ['touch', 'build/x'])] },
        { kind: 'reply', text: 'I will not touch it.' },
      );
      const turn = await submit(session.id, 'build it');
      const first = await nthRequestOf(turn.id, 1);
      assert.equal((await resolve(first.id, { decision: 'allow_session' })).status, 200);
      const second = await nthRequestOf(turn.id, 2);
      assert.match(second.prompt, /touch build\/x/, 'the identical mkdir ran without asking; the next question is about touch');
      assert.equal((await resolve(second.id, { decision: 'deny' })).status, 200);
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed');
      assert.equal(existsSync(join(server.workspace, 'build')), true);
      assert.equal(existsSync(join(server.workspace, 'build', 'x')), false);
      assert.equal(toolOutputSent(fake.requests, 'call_touch_x'), DENIED_OUTPUT);
      assert.match(toolOutputSent(fake.requests, 'call_mkdir_2') ?? '', /Exit code: 0/);
      const finished = events.ofTurn(turn.id).find((event) => event.type === 'tool.finished' && event.data.data.callId === 'call_touch_x');
      assert.equal(finished?.data.data.output, DENIED_OUTPUT);

      // the allowance is stored with the session: the next turn runs the same command silently
      fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_mkdir_3', ['mkdir', '-p', 'build'])] }, { kind: 'reply', text: 'again' });
      const next = await submit(session.id, 'once more');
      assert.equal((await waitForTurn(server, next.id)).status, 'completed');
      assert.equal(events.ofTurn(next.id).filter((event) => event.type === 'request.created').length, 0);
      assert.match(toolOutputSent(fake.requests, 'call_mkdir_3') ?? '', /Exit code: 0/);
    });

    it('a deny with a value sends the human\'s reason to the model with the denial; a blank value is no reason', async () => {
      const session = await newSession();
      fake.enqueue(
        { kind: 'reply', toolCalls: [shellCall('call_rm_reasoned', ['rm', '-rf', 'src'])] },
        { kind: 'reply', toolCalls: [shellCall('call_rm_blank', ['rm', '-rf', 'lib'])] },
        { kind: 'reply', text: 'Understood.' },
      );
      const turn = await submit(session.id, 'clean up');
      const reasoned = await nthRequestOf(turn.id, 1);
      assert.equal((await resolve(reasoned.id, { decision: 'deny', value: 'keep src, delete only build/' })).status, 200);
      const blank = await nthRequestOf(turn.id, 2);
      assert.equal((await resolve(blank.id, { decision: 'deny', value: '  ' })).status, 200);
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      assert.equal(toolOutputSent(fake.requests, 'call_rm_reasoned'), `${DENIED_OUTPUT}\nThe user's reason: keep src, delete only build/`);
      assert.equal(toolOutputSent(fake.requests, 'call_rm_blank'), DENIED_OUTPUT);
    });

    it('withdraws the pending request when a waiting turn is cancelled', async () => {
      const session = await newSession();
      fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_wait', ['touch', 'never.txt'])] });
      const turn = await submit(session.id, 'wait for me');
      const request = await nthRequestOf(turn.id, 1);
      await waitForStatus(server, turn.id, 'waiting_for_input');
      const cancelled = await server.request('POST', `/v1/turns/${turn.id}/cancel`);
      assert.equal(cancelled.json.status, 'cancelled');
      assert.equal(cancelled.json.error, 'cancelled');
      const withdrawn = await events.waitForType('request.resolved', turn.id);
      assert.equal(withdrawn.data.data.requestId, request.id);
      await events.waitForType('turn.cancelled', turn.id);
      assert.deepEqual((await server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data, []);
      const late = await resolve(request.id, { decision: 'allow_once' });
      assert.equal(late.status, 409);
      assert.equal(late.json.error.code, 'request_already_resolved');
      assert.equal(existsSync(join(server.workspace, 'never.txt')), false);
    });

    it('a cancel racing the answer to an earlier request of the same call still ends the turn', async () => {
      // root_access is answered while the cancel arrives; the tool_approval that follows must not hang
      mkdirSync(join(server.workspace, 'racing'), { recursive: true });
      for (let attempt = 0; attempt < 6; attempt++) {
        const session = (await server.request('POST', '/v1/sessions', { body: { cwd: 'racing' } })).json;
        const patch = `*** Begin Patch\n*** Add File: ../raced-${attempt}.txt\n+x\n*** End Patch`;
        fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: `call_race_${attempt}` }] });
        const turn = await submit(session.id, 'race');
        const access = await nthRequestOf(turn.id, 1);
        const answering = resolve(access.id, { decision: 'allow' });
        await new Promise((settle) => setTimeout(settle, attempt % 3));
        const cancelling = server.request('POST', `/v1/turns/${turn.id}/cancel`);
        const timeout = new Promise<'hung'>((settle) => setTimeout(() => settle('hung'), 3_000).unref());
        const [, cancelled] = await Promise.all([answering, Promise.race([cancelling, timeout])]);
        if (cancelled === 'hung') assert.fail(`attempt ${attempt}: the cancel never answered`);
        assert.equal(cancelled.json.status, 'cancelled');
        assert.deepEqual((await server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data, []);
        assert.equal(existsSync(join(server.workspace, `raced-${attempt}.txt`)), false);
      }
    });
  });
}

describe('cancel during a long-running command', () => {
  let fake: FakeProvider;
  let server: TestServer;
  before(async () => {
    fake = await startFakeProvider();
    // The command prints host pids only when it runs unconfined (bubblewrap gives it its own PID
    // namespace); security-confinement.test.ts covers the cancel of a confined command.
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), confinement: 'off' });
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('kills the whole process tree before the cancel answers', async () => {
    const events = new EventRecorder(server.url, { lastEventId: 0 });
    await events.opened;
    const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
    const script = 'sleep 60 & echo bg=$!; echo leader=$$; sleep 60';
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_sleep', script)] });
    const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'sleep' } })).json;
    const request = (await events.waitForType('request.created', turn.id)).data.data;
    await server.request('POST', `/v1/requests/${request.id}/resolve`, { body: { decision: 'allow_once' } });
    const streamed = () => events.ofTurn(turn.id).filter((event) => event.type === 'tool.output.updated').map((event) => event.data.data.output).join('');
    await events.waitFor(() => /bg=\d+/.test(streamed()) && /leader=\d+/.test(streamed()));
    const output = events.ofTurn(turn.id).find((event) => event.type === 'tool.output.updated')!.data.data;
    assert.equal(output.name, 'shell');
    assert.equal(output.truncated, false);
    const bg = Number(/bg=(\d+)/.exec(streamed())![1]);
    const leader = Number(/leader=(\d+)/.exec(streamed())![1]);
    assert.equal(processIsAlive(bg), true);
    assert.equal(groupIsAlive(leader), true);

    const cancelled = await server.request('POST', `/v1/turns/${turn.id}/cancel`);
    assert.equal(cancelled.json.status, 'cancelled');
    assert.equal(processIsAlive(bg), false, 'the background child is gone');
    assert.equal(processIsAlive(leader), false, 'the shell is gone');
    assert.equal(groupIsAlive(leader), false, 'no process of the group survives');
    events.close();
  });
});
