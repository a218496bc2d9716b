import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { answerText, startEditor, type Editor } from './acp-support.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('agentd acp on an embedded server, driven by the ACP SDK client as an editor does', () => {
  let fake: FakeProvider;
  let workspace: string;
  let stateDir: string;
  let editor: Editor;
  let sessionId: string;
  before(async () => {
    fake = await startFakeProvider();
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-acp-ws-')));
    stateDir = mkdtempSync(join(tmpdir(), 'agentd-acp-state-'));
    const modelsFile = join(stateDir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    editor = startEditor(['--models-file', modelsFile, '--state-dir', stateDir], workspace);
  });
  after(async () => {
    await editor.kill();
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('initializes with loadSession and image and embedded-context prompts, and makes a session in the cwd', async () => {
    const answer = await editor.initialize();
    assert.equal(answer.agentCapabilities?.loadSession, true);
    assert.equal(answer.agentCapabilities?.promptCapabilities?.image, true);
    assert.equal(answer.agentCapabilities?.promptCapabilities?.embeddedContext, true);
    assert.equal(answer.agentInfo?.name, 'agentd');
    const session = await editor.connection.agent.request('session/new', { cwd: workspace, mcpServers: [] });
    sessionId = session.sessionId;
    assert.equal(session.modes?.currentModeId, 'default');
    assert.deepEqual(session.configOptions?.map((option) => [option.id, option.currentValue]), [['model', 'fake-responses'], ['effort', 'none']]);
    const listed = await editor.connection.agent.request('session/list', {});
    assert.ok(listed.sessions.some((info) => info.sessionId === sessionId && info.cwd === workspace));
  });

  it('sends a prompt with an image and a resource link as one turn and streams its answer, ending end_turn', async () => {
    fake.enqueue({ kind: 'reply', reasoning: 'looking at the picture', text: 'a red dot' });
    const before = fake.requests.length;
    const answer = await editor.connection.agent.request('session/prompt', {
      sessionId,
      prompt: [
        { type: 'text', text: 'what is in this image?' },
        { type: 'image', mimeType: 'image/png', data: PNG },
        { type: 'resource_link', name: 'notes.md', uri: `file://${workspace}/notes.md` },
      ],
    });
    assert.equal(answer.stopReason, 'end_turn');
    const sent = JSON.stringify(fake.requests[before].body);
    assert.ok(sent.includes(PNG), 'the image reaches the model');
    assert.ok(sent.includes(`file://${workspace}/notes.md`), 'the resource link is named in the input');
    assert.equal(answerText(editor.updates, sessionId), 'a red dot');
    assert.ok(editor.updates.some((notification) => notification.update.sessionUpdate === 'agent_thought_chunk'), 'reasoning is a thought chunk');
  });

  it('asks permission as an editor dialog: allow_once runs the command, deny does not; tool calls go pending → in_progress → completed', async () => {
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_allowed', ['touch', 'allowed.txt'])] }, { kind: 'reply', toolCalls: [shellCall('call_denied', ['touch', 'denied.txt'])] }, { kind: 'reply', text: 'done' });
    editor.answers.push('allow_once', 'deny');
    const answer = await editor.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'make two files' }] });
    assert.equal(answer.stopReason, 'end_turn');
    assert.equal(existsSync(join(workspace, 'allowed.txt')), true);
    assert.equal(existsSync(join(workspace, 'denied.txt')), false);
    const [first] = editor.permissions;
    assert.deepEqual(first.options.map((option) => [option.optionId, option.kind]), [['allow_once', 'allow_once'], ['allow_session', 'allow_always'], ['deny', 'reject_once']]);
    assert.equal(first.toolCall.toolCallId, 'call_allowed');
    const statuses = editor.updates
      .map((notification) => notification.update)
      .filter((update) => (update.sessionUpdate === 'tool_call' || update.sessionUpdate === 'tool_call_update') && update.toolCallId === 'call_allowed' && update.status)
      .map((update) => (update as { status: string }).status);
    assert.deepEqual(statuses, ['pending', 'in_progress', 'completed']);
    const call = editor.updates.find((notification) => notification.update.sessionUpdate === 'tool_call' && notification.update.toolCallId === 'call_allowed')!.update as { kind: string };
    assert.equal(call.kind, 'execute');
  });

  it('cancels the running turn on session/cancel: the prompt answers cancelled', async () => {
    fake.enqueue({ kind: 'hang', afterText: 'starting' });
    const before = fake.requests.length;
    const prompt = editor.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'take forever' }] });
    await fake.waitForRequests(before + 1);
    await editor.connection.agent.notify('session/cancel', { sessionId });
    assert.equal((await prompt).stopReason, 'cancelled');
  });

  it('cancels a turn whose session/cancel came while it was being admitted', async () => {
    fake.enqueue({ kind: 'hang' });
    const prompt = editor.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'cancelled at once' }] });
    await editor.connection.agent.notify('session/cancel', { sessionId });
    assert.equal((await prompt).stopReason, 'cancelled');
  });

  it('switches plan mode and sets model and effort', async () => {
    await editor.connection.agent.request('session/set_mode', { sessionId, modeId: 'plan' });
    const effort = await editor.connection.agent.request('session/set_config_option', { sessionId, configId: 'effort', value: 'high' });
    assert.equal(effort.configOptions.find((option) => option.id === 'effort')?.currentValue, 'high');
    const model = await editor.connection.agent.request('session/set_config_option', { sessionId, configId: 'model', value: 'fake-anthropic' });
    assert.equal(model.configOptions.find((option) => option.id === 'model')?.currentValue, 'fake-anthropic');
    const loaded = await editor.connection.agent.request('session/resume', { sessionId, cwd: workspace });
    assert.equal(loaded.modes?.currentModeId, 'plan');
    fake.enqueue({ kind: 'reply', text: 'planning' });
    const before = fake.requests.length;
    await editor.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'plan it' }] });
    assert.equal(fake.requests[before].dialect, 'anthropic-messages');
    assert.match(JSON.stringify(fake.requests[before].body), /plan mode/);
  });

  it('answers bad requests with JSON-RPC errors that say what is wrong, and keeps serving', async () => {
    await assert.rejects(editor.connection.agent.request('session/new', { cwd: tmpdir(), mcpServers: [] }), (error: RequestError) => error.code === -32602 && /workspace/.test(error.message));
    await assert.rejects(
      editor.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'two images' }, { type: 'image', mimeType: 'image/png', data: PNG }, { type: 'image', mimeType: 'image/png', data: PNG }] }),
      (error: RequestError) => error.code === -32602 && /image/i.test(error.message),
    );
    await assert.rejects(editor.connection.agent.request('session/prompt', { sessionId: '00000000-0000-4000-8000-000000000000', prompt: [] }), (error: RequestError) => error.code === -32002);
    await assert.rejects(editor.connection.agent.request('session/set_mode', { sessionId, modeId: 'turbo' }), (error: RequestError) => error.code === -32602 && /unknown mode turbo/.test(error.message));
    await assert.rejects(editor.connection.agent.request('agentd/nonsense', {}), (error: RequestError) => error.code === -32601);
    const listed = await editor.connection.agent.request('session/list', {});
    assert.ok(listed.sessions.length > 0, 'still serving');
  });

  it('writes nothing but JSON-RPC messages to standard output', () => {
    assert.ok(editor.stdoutLines.length > 10);
    for (const line of editor.stdoutLines) assert.equal(JSON.parse(line).jsonrpc, '2.0', line);
  });
});
