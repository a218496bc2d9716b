import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { PROTOCOL_VERSION, type RequestError } from '@agentclientprotocol/sdk';
import { fakeProviderModels, startTestServer, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { answerText, BIN, startEditor } from './acp-support.ts';

const TOKEN = 'acp-test-token-0123456789abcdef0123456789';

describe('agentd acp --url: a client of a running agentd, whose turns outlive the editor', () => {
  let fake: FakeProvider;
  let server: TestServer;
  before(async () => {
    fake = await startFakeProvider();
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), env: { SERVICE_TOKEN: TOKEN } });
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('keeps the turn running when the editor goes away; session/load replays the history, then the live turn', async () => {
    const first = startEditor(['--url', server.url], server.workspace, { SERVICE_TOKEN: TOKEN });
    await first.initialize();
    const { sessionId } = await first.connection.agent.request('session/new', { cwd: server.workspace, mcpServers: [] });
    fake.enqueue({ kind: 'reply', text: 'the first answer' }, { kind: 'slow-first-byte', delayMs: 2000, text: 'finished while the editor was away' });
    await first.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'first question' }] });
    const asked = fake.requests.length;
    void first.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'a long question' }] }).catch(() => undefined);
    await fake.waitForRequests(asked + 1);
    await first.kill();

    const second = startEditor(['--url', server.url], server.workspace, { SERVICE_TOKEN: TOKEN });
    try {
      await second.initialize();
      const listed = await second.connection.agent.request('session/list', {});
      assert.ok(listed.sessions.some((info) => info.sessionId === sessionId));
      await second.connection.agent.request('session/load', { sessionId, cwd: server.workspace, mcpServers: [] });
      const replayed = second.updates.map((notification) => notification.update);
      const userWords = replayed.filter((update) => update.sessionUpdate === 'user_message_chunk').map((update) => (update as { content: { text: string } }).content.text);
      assert.deepEqual(userWords, ['first question', 'a long question'], 'the stored turn and the live one');
      // The live turn's answer may already be streaming when load answers (its model is held for
      // two seconds of wall clock, which a loaded machine can spend starting the second editor):
      // the stored answer comes first either way, and each answer arrives exactly once.
      assert.ok(answerText(second.updates, sessionId).startsWith('the first answer'), 'the stored answer, before the live one');
      await second.until((updates) => answerText(updates, sessionId).endsWith('finished while the editor was away'));
      assert.equal(answerText(second.updates, sessionId), 'the first answerfinished while the editor was away', 'no answer twice');
      const turns = (await server.request('GET', `/v1/turns?sessionId=${sessionId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json.data;
      assert.equal((await waitForTurnWithToken(server, turns[0].id)).status, 'completed');
    } finally {
      await second.kill();
    }
  });

  it('refuses with a clear error when the token is wrong', async () => {
    const editor = startEditor(['--url', server.url], server.workspace, { SERVICE_TOKEN: 'a-wrong-token-that-is-long-enough-0000000' });
    try {
      await editor.initialize();
      await assert.rejects(editor.connection.agent.request('session/new', { cwd: server.workspace, mcpServers: [] }), (error: RequestError) => error.code === -32602 && /unauthorized/.test(error.message));
    } finally {
      await editor.kill();
    }
  });

  it('refuses chat-only options and server options with --url as usage errors (exit 2, on stderr)', async () => {
    for (const [args, message] of [[['--json'], /--json: chat options/], [['--url', server.url, '--yolo'], /--yolo: server options only apply without --url/]] as const) {
      const child = spawn(process.execPath, [BIN, 'acp', ...args], { env: { PATH: process.env.PATH }, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const [code] = await once(child, 'exit');
      assert.equal(code, 2, stderr);
      assert.match(stderr, message);
      assert.equal(stdout, '', 'nothing but protocol on stdout');
    }
  });

  it('answers malformed JSON and unknown methods with JSON-RPC errors and keeps serving', async () => {
    const child = spawn(process.execPath, [BIN, 'acp', '--url', server.url], { env: { PATH: process.env.PATH, SERVICE_TOKEN: TOKEN }, stdio: ['pipe', 'pipe', 'pipe'] });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const next = async () => JSON.parse((await lines.next()).value as string);
    try {
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} } })}\n`);
      assert.equal((await next()).id, 1);
      child.stdin.write('{"jsonrpc": "2.0", "id": 2, "method": \n');
      const parseError = await next();
      assert.equal(parseError.error.code, -32700);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'session/teleport', params: {} })}\n`);
      const unknown = await next();
      assert.equal(unknown.id, 3);
      assert.equal(unknown.error.code, -32601);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'session/new', params: { cwd: 42 } })}\n`);
      const invalid = await next();
      assert.equal(invalid.id, 4);
      assert.equal(invalid.error.code, -32602);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'session/list', params: {} })}\n`);
      assert.ok(Array.isArray((await next()).result.sessions), 'still serving');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

async function waitForTurnWithToken(server: TestServer, turnId: string) {
  for (;;) {
    const turn = (await server.request('GET', `/v1/turns/${turnId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json;
    if (['completed', 'failed', 'cancelled'].includes(turn.status)) return turn;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
