import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { client, PROTOCOL_VERSION, type SessionNotification } from '@agentclientprotocol/sdk';
import { createHttpStream } from '@agentclientprotocol/sdk/experimental/http-client';
import { fakeProviderModels, startTestServer, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { answerText } from './acp-support.ts';

const TOKEN = 'acp-http-test-token-0123456789abcdef012345';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** An editor on /acp through the SDK's Streamable HTTP client, answering permissions with `answers`. */
function httpEditor(url: string, token = TOKEN) {
  const updates: SessionNotification[] = [];
  const answers: string[] = [];
  const watchers = new Set<() => void>();
  const app = client({ name: 'http-editor' })
    .onNotification('session/update', ({ params }) => {
      updates.push(params);
      for (const watcher of watchers) watcher();
    })
    .onRequest('session/request_permission', () => {
      const optionId = answers.shift();
      return { outcome: optionId ? { outcome: 'selected' as const, optionId } : { outcome: 'cancelled' as const } };
    });
  const connection = app.connect(createHttpStream(`${url}/acp`, { headers: { authorization: `Bearer ${token}` } }));
  const until = (predicate: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => predicate() && (watchers.delete(check), resolve());
      watchers.add(check);
      check();
    });
  return { connection, updates, answers, until, initialize: () => connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} }) };
}

describe('ACP over Streamable HTTP at /acp', () => {
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

  it('runs a session as over stdio: initialize, new, a prompt with a permission, the answer streamed', async () => {
    const editor = httpEditor(server.url);
    try {
      const init = await editor.initialize();
      assert.equal(init.agentCapabilities?.loadSession, true);
      const { sessionId } = await editor.connection.agent.request('session/new', { cwd: server.workspace, mcpServers: [] });
      fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'over-http.txt'] }), callId: 'call_http' }] }, { kind: 'reply', text: 'made it over HTTP' });
      editor.answers.push('allow_once');
      const answer = await editor.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'make a file' }] });
      assert.equal(answer.stopReason, 'end_turn');
      assert.equal(existsSync(join(server.workspace, 'over-http.txt')), true);
      assert.equal(answerText(editor.updates, sessionId), 'made it over HTTP');
    } finally {
      editor.connection.close();
    }
  });

  it('loses nothing when the connection drops: reconnect, initialize, session/load and the running turn is there', async () => {
    const first = httpEditor(server.url);
    await first.initialize();
    const { sessionId } = await first.connection.agent.request('session/new', { cwd: server.workspace, mcpServers: [] });
    fake.enqueue({ kind: 'slow-first-byte', delayMs: 1500, text: 'answered after the drop' });
    const asked = fake.requests.length;
    void first.connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'a question before the drop' }] }).catch(() => undefined);
    await fake.waitForRequests(asked + 1);
    first.connection.close();

    const second = httpEditor(server.url);
    try {
      await second.initialize();
      await second.connection.agent.request('session/load', { sessionId, cwd: server.workspace, mcpServers: [] });
      assert.ok(second.updates.some((notification) => notification.update.sessionUpdate === 'user_message_chunk' && (notification.update.content as { text: string }).text === 'a question before the drop'));
      await second.until(() => answerText(second.updates, sessionId) === 'answered after the drop');
    } finally {
      second.connection.close();
    }
  });

  it('is behind the access rules: no bearer is 401 in the envelope; a body that is not JSON is a JSON-RPC parse error', async () => {
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} } });
    const anonymous = await server.request('POST', '/acp', { rawBody: initialize, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.json.error.code, 'unauthorized');
    const garbled = await server.request('POST', '/acp', { rawBody: '{"jsonrpc": "2.0", "id": 1, "meth', headers: { ...AUTH, 'content-type': 'application/json' } });
    assert.equal(garbled.status, 400);
    assert.equal(garbled.json.error.code, -32700);
    const forged = await server.request('POST', '/acp', { rawBody: initialize, headers: { ...AUTH, 'content-type': 'application/json', 'acp-connection-id': 'not-a-connection' } });
    assert.equal(forged.status, 404);
    assert.equal(forged.json.error.code, 'connection_not_found');
  });

  it('marks /acp and /mcp as extensions in /openapi.json', async () => {
    const document = (await server.request('GET', '/openapi.json', { headers: AUTH })).json;
    for (const path of ['/acp', '/mcp']) {
      for (const method of ['get', 'post', 'delete']) assert.equal(document.paths[path][method]['x-agentd-extension'], true, `${method} ${path}`);
    }
  });
});
