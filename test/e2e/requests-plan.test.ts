import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startTestServer, fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider, type FakeRequest } from '../support/fake-provider.ts';
import type { EventRecorder } from '../support/events.ts';
import { toolOutputSent, useFakeServer } from '../support/harness.ts';
import { createBackend } from '../support/backends.ts';
import { openStore } from '../../src/store/database.ts';
import { EventHub } from '../../src/runtime/event-hub.ts';
import { HumanRequestRefused, MAX_REQUEST_OPTIONS, RequestBroker } from '../../src/runtime/turn/requests.ts';

const call = (name: string, callId: string, args: unknown) => ({ name, arguments: JSON.stringify(args), callId });

describe('plan mode and questions through the server', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  let events!: EventRecorder;
  const harness = useFakeServer();
  before(() => ({ fake, server, events } = harness));
  const { newSession, submit, resolve, nthRequestOf } = harness;

  it('enters plan mode, refuses edits there, and sends request_changes feedback and a custom answer to the model', async () => {
    const session = await newSession();
    const patch = '*** Begin Patch\n*** Add File: planned.txt\n+too early\n*** End Patch';
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('enter_plan_mode', 'call_enter', { reason: 'the change is risky' })] },
      { kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_early_patch' }] },
      { kind: 'reply', toolCalls: [call('exit_plan_mode', 'call_exit', { plan: '1. Rewrite the parser\n2. Ship it' })] },
      { kind: 'reply', toolCalls: [call('ask_question', 'call_ask', { question: 'Which indentation?', options: ['tabs', 'spaces'] })] },
      { kind: 'reply', text: 'Revised plan coming.' },
    );
    const firstRequest = fake.requests.length;
    const turn = await submit(session.id, 'plan the parser rewrite');

    const enter = await nthRequestOf(turn.id, 1);
    assert.equal(enter.kind, 'plan_enter');
    assert.deepEqual(enter.options, ['enter', 'stay']);
    assert.match(enter.prompt, /the change is risky/);
    assert.equal((await resolve(enter.id, { decision: 'enter' })).status, 200);

    const exit = await nthRequestOf(turn.id, 2);
    assert.equal(exit.kind, 'plan_exit', 'the edit in plan mode was refused without asking');
    assert.deepEqual(exit.options, ['approve', 'request_changes', 'cancel']);
    assert.match(exit.prompt, /1\. Rewrite the parser\n2\. Ship it/);
    const feedback = 'Please also add tests for the tokenizer.';
    assert.equal((await resolve(exit.id, { decision: 'request_changes', value: feedback })).status, 200);

    const question = await nthRequestOf(turn.id, 3);
    assert.equal(question.kind, 'plan_question');
    assert.equal(question.prompt, 'Which indentation?');
    assert.deepEqual(question.options, ['tabs', 'spaces', 'custom']);
    const answer = 'two spaces, like the rest of the repository';
    assert.equal((await resolve(question.id, { decision: 'custom', value: answer })).status, 200);

    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    const sent = fake.requests.slice(firstRequest);
    assert.equal(sent.length, 5);
    assert.doesNotMatch(sent[0].body.instructions, /plan mode/, 'not in plan mode before entering');
    assert.match(toolOutputSent(sent, 'call_enter') ?? '', /now in plan mode/);
    for (const request of sent.slice(2, 4)) assert.match(request.body.instructions, /You are in plan mode/);
    assert.match(toolOutputSent(sent, 'call_early_patch') ?? '', /plan mode/);
    assert.equal(existsSync(join(server.workspace, 'planned.txt')), false);
    // the feedback reaches the very next model request, as the exit call's output
    const afterExit = sent[3].body.input;
    assert.ok(afterExit.some((item: any) => item.type === 'function_call_output' && item.call_id === 'call_exit' && item.output.includes(feedback)));
    const afterQuestion = sent[4].body.input;
    assert.ok(afterQuestion.some((item: any) => item.type === 'function_call_output' && item.call_id === 'call_ask' && item.output.includes(answer)));

    // plan mode is session state: the next turn starts in it
    fake.enqueue({ kind: 'reply', text: 'still planning' });
    const next = await submit(session.id, 'go on');
    await waitForTurn(server, next.id);
    assert.match(fake.requests.at(-1)!.body.instructions, /You are in plan mode/);
  });

  it('approving the plan leaves plan mode, and the model may edit again (with approval)', async () => {
    const session = await newSession();
    const patch = '*** Begin Patch\n*** Add File: approved.txt\n+now\n*** End Patch';
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('enter_plan_mode', 'call_enter_2', { reason: 'plan first' })] },
      { kind: 'reply', toolCalls: [call('exit_plan_mode', 'call_exit_2', { plan: 'add approved.txt' })] },
      { kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_patch_2' }] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await submit(session.id, 'plan then do');
    await resolve((await nthRequestOf(turn.id, 1)).id, { decision: 'enter' });
    await resolve((await nthRequestOf(turn.id, 2)).id, { decision: 'approve' });
    const approval = await nthRequestOf(turn.id, 3);
    assert.equal(approval.kind, 'tool_approval');
    assert.match(approval.prompt, /\*\*\* Add File: approved\.txt\n\+now/, 'the prompt shows the complete patch');
    await resolve(approval.id, { decision: 'allow_once' });
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.match(toolOutputSent(fake.requests, 'call_exit_2') ?? '', /approved the plan/);
    assert.doesNotMatch(fake.requests.at(-1)!.body.instructions, /plan mode/);
    assert.equal(existsSync(join(server.workspace, 'approved.txt')), true);
  });

  it('refuses a request over 64 KiB without publishing it, with a warning; 100 options are still shown', async () => {
    const session = await newSession();
    const hugeLine = 'x'.repeat(70 * 1024);
    const patch = `*** Begin Patch\n*** Add File: huge.txt\n+${hugeLine}\n*** End Patch`;
    const options = Array.from({ length: 99 }, (_, index) => `option ${index + 1}`);
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_huge' }] },
      { kind: 'reply', toolCalls: [call('ask_question', 'call_many', { question: 'Pick one', options })] },
      { kind: 'reply', toolCalls: [call('ask_question', 'call_too_many', { question: 'Pick one', options: [...options, 'option 100'] })] },
      { kind: 'reply', text: 'ok' },
    );
    const turn = await submit(session.id, 'write a huge file');
    const question = await nthRequestOf(turn.id, 1);
    assert.equal(question.options.length, MAX_REQUEST_OPTIONS, 'the model\'s 99 options plus custom');
    await resolve(question.id, { decision: 'option 99' });
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');

    const created = events.ofTurn(turn.id).filter((event) => event.type === 'request.created');
    assert.equal(created.length, 1, 'neither the huge approval nor the 100-option question was published');
    const warning = events.ofTurn(turn.id).find((event) => event.type === 'warning')!.data.data;
    assert.match(warning.text, /tool_approval request was refused/);
    assert.match(warning.text, /limit 65536/);
    assert.equal(warning.truncated, false);
    assert.match(toolOutputSent(fake.requests, 'call_huge') ?? '', /too large to show a human/);
    assert.equal(existsSync(join(server.workspace, 'huge.txt')), false, 'fail closed: nothing written');
    assert.match(toolOutputSent(fake.requests, 'call_many') ?? '', /The user chose: option 99/);
    assert.match(toolOutputSent(fake.requests, 'call_too_many') ?? '', /"options" may have at most 99 items/);

    // the huge arguments were streamed as events with their truncation flags set
    const updated = events.ofTurn(turn.id).find((event) => event.type === 'tool.updated' && event.data.data.callId === 'call_huge')!.data.data;
    assert.equal(updated.argumentsTruncated, true);
    assert.equal(updated.arguments.length, 16_384);
    assert.ok(updated.arguments.endsWith('…'));
    const lastDelta = events.ofTurn(turn.id).filter((event) => event.type === 'tool.arguments.updated' && event.data.data.callId === 'call_huge').at(-1)!.data.data;
    assert.equal(lastDelta.argumentsTruncated, true);
  });
});

describe('the request broker behind the server', () => {
  it('refuses a request with more than 100 options before publishing it, with a warning event', async (t) => {
    const backend = await createBackend('sqlite');
    const store = await openStore({ databaseUrl: null, stateDir: backend.stateDir });
    t.after(async () => {
      await store.close();
      await backend.drop();
    });
    const hub = await EventHub.open(store.db, 'default', 100, pino({ level: 'silent' }));
    const broker = new RequestBroker(hub);
    let waiting = false;
    const options = Array.from({ length: MAX_REQUEST_OPTIONS + 1 }, (_, index) => `o${index}`);
    const turnId = '00000000-0000-7000-8000-000000000001';
    await assert.rejects(broker.ask({ sessionId: 's', turnId, agentId: null, kind: 'plan_question', prompt: 'Pick', options }, () => (waiting = true)), HumanRequestRefused);
    assert.equal(waiting, false, 'the turn never waits for a request nobody can see');
    assert.deepEqual(await broker.list(null), []);
    const types = hub.log.eventsAfter(0).map((event) => event.type);
    assert.deepEqual(types, ['warning']);
  });
});
