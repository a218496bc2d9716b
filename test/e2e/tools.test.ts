import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useFakeServer, useServerOnFakeProvider } from '../support/harness.ts';
import { responsesReply } from '../support/fake-provider-wire.ts';
import { EventRecorder, type ReceivedEvent } from '../support/events.ts';

const call = (name: string, callId: string, args: unknown) => ({ name, arguments: JSON.stringify(args), callId });
const toolEvent = (events: ReceivedEvent[], type: string, callId: string) => events.find((event) => event.type === type && event.data.data.callId === callId)?.data.data;

describe('tools through the server', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  let events!: EventRecorder;
  let outside: string;
  const harness = useFakeServer();
  before(() => {
    ({ fake, server, events } = harness);
    outside = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-outside-')));
    writeFileSync(join(outside, 'secret.txt'), 'the secret outside every root\n');
  });
  after(() => rmSync(outside, { recursive: true, force: true }));

  const newSession = async (body: Record<string, unknown> = {}) => (await server.request('POST', '/v1/sessions', { body })).json;
  const submit = async (sessionId: string, input: string) => (await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } })).json;
  const resolve = (id: string, decision: string) => server.request('POST', `/v1/requests/${id}/resolve`, { body: { decision } });
  const requestsOf = (turnId: string) => events.ofTurn(turnId).filter((event) => event.type === 'request.created').map((event) => event.data.data);
  const nextRequest = async (turnId: string, n: number) => {
    await events.waitFor(() => requestsOf(turnId).length >= n);
    return requestsOf(turnId)[n - 1];
  };

  it('applies a patch to a real file through the custom apply_patch tool of the Responses dialect', async () => {
    const session = await newSession();
    writeFileSync(join(server.workspace, 'greeting.txt'), 'hello\nworld\n');
    const patch = '*** Begin Patch\n*** Update File: greeting.txt\n@@\n hello\n-world\n+agentd\n*** End Patch';
    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_patch' }] }, { kind: 'reply', text: 'Patched.' });
    const first = fake.requests.length;
    const turn = await submit(session.id, 'greet agentd');
    const approval = await nextRequest(turn.id, 1);
    assert.equal(approval.kind, 'tool_approval');
    assert.ok(approval.prompt.includes(patch), 'the human sees the complete patch');
    await resolve(approval.id, 'allow_once');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(readFileSync(join(server.workspace, 'greeting.txt'), 'utf8'), 'hello\nagentd\n');

    const offered = fake.requests[first].body.tools.find((tool: any) => tool.name === 'apply_patch');
    assert.equal(offered.type, 'custom');
    const returned = fake.requests[first + 1].body.input.find((item: any) => item.call_id === 'call_patch' && item.type.endsWith('output'));
    assert.equal(returned.type, 'custom_tool_call_output');
    assert.match(returned.output, /Success\. Updated the following files:\n.*greeting\.txt/);

    const turnEvents = events.ofTurn(turn.id);
    const started = toolEvent(turnEvents, 'tool.started', 'call_patch');
    // itemId: the Responses item of the call, as history (and the next request) keeps it
    const callItem = fake.requests[first + 1].body.input.find((item: any) => item.call_id === 'call_patch' && item.type === 'custom_tool_call');
    assert.match(callItem.id, /\S/);
    assert.deepEqual(started, { callId: 'call_patch', name: 'apply_patch', kind: 'custom', argumentsEncrypted: false, async: false, argumentsTruncated: false, arguments: null, itemId: callItem.id });
    const deltas = turnEvents.filter((event) => event.type === 'tool.arguments.updated').map((event) => event.data.data);
    assert.ok(deltas.length > 1, 'arguments stream as they arrive');
    assert.equal(deltas.at(-1).arguments, patch);
    assert.ok(deltas.every((delta) => delta.kind === 'custom' && delta.name === 'apply_patch' && patch.startsWith(delta.arguments)));
    const updated = toolEvent(turnEvents, 'tool.updated', 'call_patch');
    assert.deepEqual(updated, { ...started, arguments: patch });
    const finished = toolEvent(turnEvents, 'tool.finished', 'call_patch');
    assert.deepEqual(Object.keys(finished).sort(), ['async', 'callId', 'imageCount', 'itemId', 'kind', 'output', 'truncated']);
    assert.equal(finished.itemId, callItem.id);
    assert.equal(finished.kind, 'custom');
    assert.equal(finished.output, returned.output);
    assert.equal(finished.truncated, false);
    assert.equal(finished.imageCount, 0);
    const order = ['tool.started', 'tool.arguments.updated', 'tool.updated', 'request.created', 'request.resolved', 'tool.finished'].map((type) => turnEvents.findIndex((event) => event.type === type));
    assert.deepEqual(order, [...order].sort((a, b) => a - b));
  });

  it('sends tool results back in the Anthropic and Chat Completions native shapes', async () => {
    writeFileSync(join(server.workspace, 'notes.txt'), 'remember the milk\n');
    const anthropic = await newSession({ model: 'fake-anthropic' });
    fake.enqueue({ kind: 'reply', toolCalls: [call('read_file', 'toolu_read', { path: 'notes.txt' })] }, { kind: 'reply', text: 'read' });
    const readTurn = await submit(anthropic.id, 'read the notes');
    assert.equal((await waitForTurn(server, readTurn.id)).status, 'completed');
    const anthropicBody = fake.requests.at(-1)!.body;
    const result = anthropicBody.messages.flatMap((message: any) => (Array.isArray(message.content) ? message.content : [])).find((block: any) => block.type === 'tool_result');
    assert.equal(result.tool_use_id, 'toolu_read');
    assert.match(JSON.stringify(result.content), /remember the milk/);
    assert.equal(anthropicBody.tools.find((tool: any) => tool.name === 'apply_patch').input_schema.type, 'object');

    const chat = await newSession({ model: 'fake-chat' });
    const patch = '*** Begin Patch\n*** Add File: from-chat.txt\n+written by a function-tool patch\n*** End Patch';
    fake.enqueue({ kind: 'reply', toolCalls: [call('apply_patch', 'call_chat_patch', { patch })] }, { kind: 'reply', text: 'added' });
    const patchTurn = await submit(chat.id, 'add a file');
    const approval = await nextRequest(patchTurn.id, 1);
    await resolve(approval.id, 'allow_once');
    assert.equal((await waitForTurn(server, patchTurn.id)).status, 'completed');
    assert.equal(readFileSync(join(server.workspace, 'from-chat.txt'), 'utf8'), 'written by a function-tool patch\n');
    const toolMessage = fake.requests.at(-1)!.body.messages.find((message: any) => message.role === 'tool');
    assert.equal(toolMessage.tool_call_id, 'call_chat_patch');
    assert.match(toolMessage.content, /Success/);
    assert.equal(toolEvent(events.ofTurn(patchTurn.id), 'tool.finished', 'call_chat_patch').kind, 'function');
  });

  it('asks root_access outside the session directory, and refuses paths that leave every root', async () => {
    mkdirSync(join(server.workspace, 'project'), { recursive: true });
    writeFileSync(join(server.workspace, 'shared.txt'), 'shared between projects\n');
    symlinkSync(outside, join(server.workspace, 'project', 'escape'));
    const session = await newSession({ cwd: 'project' });
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('read_file', 'call_shared', { path: '../shared.txt' })] },
      { kind: 'reply', toolCalls: [call('read_file', 'call_denied', { path: '../shared.txt' })] },
      { kind: 'reply', toolCalls: [call('read_file', 'call_escape', { path: 'escape/secret.txt' }), call('list_dir', 'call_etc', { path: '/etc' })] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await submit(session.id, 'look around');
    const access = await nextRequest(turn.id, 1);
    assert.equal(access.kind, 'root_access');
    assert.deepEqual(access.options, ['allow', 'deny']);
    assert.ok(access.prompt.includes('../shared.txt'));
    assert.ok(access.prompt.includes(join(server.workspace, 'shared.txt')));
    await resolve(access.id, 'allow');
    await resolve((await nextRequest(turn.id, 2)).id, 'deny');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(requestsOf(turn.id).length, 2, 'escapes are refused without asking');

    const finished = (callId: string) => toolEvent(events.ofTurn(turn.id), 'tool.finished', callId).output;
    assert.match(finished('call_shared'), /shared between projects/);
    assert.match(finished('call_denied'), /denied/);
    assert.match(finished('call_escape'), /outside every allowed workspace root/);
    assert.match(finished('call_etc'), /outside every allowed workspace root/);
    const everythingSent = JSON.stringify(fake.requests.map((request) => request.body));
    assert.ok(!everythingSent.includes('the secret outside every root'), 'the symlink never led out');
  });

  it('streams command output, runs read-only commands without asking, refuses destructive ones, and flags truncation', async () => {
    const session = await newSession();
    writeFileSync(join(server.workspace, 'big.txt'), Array.from({ length: 1000 }, (_, index) => `line ${index} ${'y'.repeat(20)}`).join('\n'));
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('shell', 'call_echo', { command: 'echo streamed-text' })] },
      { kind: 'reply', toolCalls: [call('shell', 'call_rm', { command: 'rm -rf /' })] },
      { kind: 'reply', toolCalls: [call('read_file', 'call_big', { path: 'big.txt' })] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await submit(session.id, 'work');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    const turnEvents = events.ofTurn(turn.id);
    assert.equal(turnEvents.filter((event) => event.type === 'request.created').length, 0);
    const streamed = turnEvents.filter((event) => event.type === 'tool.output.updated').map((event) => event.data.data);
    assert.ok(streamed.some((output) => output.name === 'shell' && output.output.includes('streamed-text') && output.truncated === false));
    assert.match(toolEvent(turnEvents, 'tool.finished', 'call_echo').output, /Exit code: 0[\s\S]*streamed-text/);
    assert.match(toolEvent(turnEvents, 'tool.finished', 'call_rm').output, /^Refused: .*never run/);
    const big = toolEvent(turnEvents, 'tool.finished', 'call_big');
    assert.equal(big.truncated, true);
    assert.equal(big.output.length, 16_384);
    assert.ok(big.output.endsWith('…'));
    const modelSaw = fake.requests.at(-1)!.body.input.find((item: any) => item.call_id === 'call_big' && item.type === 'function_call_output');
    assert.ok(modelSaw.output.length > 16_384, 'the model gets the whole output; only the event is bounded');
    assert.match(modelSaw.output, /line 999 y/);
  });

  it('retracts a tool call whose attempt failed and was retried', async () => {
    const session = await newSession();
    const context = { model: 'fake-responses-model', id: 'cut', encryptedReasoning: false, includeUsage: false };
    const cut = responsesReply({ toolCalls: [call('list_dir', 'call_cut', {})] }, context).slice(0, -1);
    fake.enqueue({ kind: 'raw', body: cut.join('') }, { kind: 'reply', text: 'second attempt' });
    const turn = await submit(session.id, 'try');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    const turnEvents = events.ofTurn(turn.id);
    assert.ok(toolEvent(turnEvents, 'tool.started', 'call_cut'));
    assert.deepEqual(toolEvent(turnEvents, 'tool.retracted', 'call_cut'), { callId: 'call_cut', displayOnly: true });
    assert.equal(toolEvent(turnEvents, 'tool.finished', 'call_cut'), undefined, 'the retracted call never ran');
  });
});

describe('tools with --yolo', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const started = useServerOnFakeProvider({ args: ['--yolo'] });
  before(() => ({ fake, server } = started));

  it('auto-approves commands and root access, but still refuses destructive commands and asks plan questions', async () => {
    const events = new EventRecorder(server.url, { lastEventId: 0 });
    await events.opened;
    mkdirSync(join(server.workspace, 'project'));
    writeFileSync(join(server.workspace, 'sibling.txt'), 'next door\n');
    const session = (await server.request('POST', '/v1/sessions', { body: { cwd: 'project' } })).json;
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('shell', 'call_touch', { command: ['touch', 'yolo.txt'] }), call('read_file', 'call_sibling', { path: '../sibling.txt' })] },
      { kind: 'reply', toolCalls: [call('shell', 'call_reboot', { command: 'sudo reboot' })] },
      { kind: 'reply', toolCalls: [call('enter_plan_mode', 'call_plan', { reason: 'why not' })] },
      { kind: 'reply', text: 'done' },
    );
    const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'go' } })).json;
    const planRequest = (await events.waitForType('request.created', turn.id)).data.data;
    assert.equal(planRequest.kind, 'plan_enter', 'the first and only question is the plan one');
    await server.request('POST', `/v1/requests/${planRequest.id}/resolve`, { body: { decision: 'stay' } });
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    const turnEvents = events.ofTurn(turn.id);
    assert.equal(turnEvents.filter((event) => event.type === 'request.created').length, 1);
    assert.equal(readFileSync(join(server.workspace, 'project', 'yolo.txt'), 'utf8'), '');
    assert.match(toolEvent(turnEvents, 'tool.finished', 'call_sibling').output, /next door/);
    assert.match(toolEvent(turnEvents, 'tool.finished', 'call_reboot').output, /^Refused/);
    assert.match(toolEvent(turnEvents, 'tool.finished', 'call_plan').output, /declined plan mode/);
    events.close();
  });
});
