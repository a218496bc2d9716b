import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, PROTOCOL_VERSION, type RequestError } from '@agentclientprotocol/sdk';
import { createHttpStream } from '@agentclientprotocol/sdk/experimental/http-client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { FakeProvider } from '../support/fake-provider.ts';
import type { TenantClient, TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} } });

describe('/acp and /mcp with two tenants: each reaches only its own sessions (attacks by the other)', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let alice!: TenantClient;
  let bob!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 2 });
  before(() => {
    ({ fake, hosted } = started);
    [alice, bob] = hosted.tenants;
  });

  it("refuses bob alice's ACP connection, her session over his own connection, and her turn and sessions over MCP", async () => {
    const aliceAcp = client({ name: 'alice-editor' }).connect(createHttpStream(`${hosted.url}/acp`, { headers: { authorization: `Bearer ${alice.token}` } }));
    const bobAcp = client({ name: 'bob-editor' }).connect(createHttpStream(`${hosted.url}/acp`, { headers: { authorization: `Bearer ${bob.token}` } }));
    const bobMcp = new Client({ name: 'bob-agent', version: '1.0.0' });
    try {
      await aliceAcp.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await aliceAcp.agent.request('session/new', { cwd: alice.workspaceRoot, mcpServers: [] });
      fake.enqueue({ kind: 'reply', text: 'alice private answer' });
      await aliceAcp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'alice private prompt' }] });

      // alice's connection id, then bob's token on it
      const opened = await alice.request('POST', '/acp', { rawBody: INITIALIZE, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } });
      const connectionId = opened.headers['acp-connection-id'] as string;
      assert.ok(connectionId);
      const hijack = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'session/load', params: { sessionId, cwd: alice.workspaceRoot, mcpServers: [] } });
      const taken = await bob.request('POST', '/acp', { rawBody: hijack, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'acp-connection-id': connectionId } });
      assert.equal(taken.status, 404);
      assert.equal(taken.json.error.code, 'connection_not_found');

      await bobAcp.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      await assert.rejects(bobAcp.agent.request('session/load', { sessionId, cwd: alice.workspaceRoot, mcpServers: [] }), (error: RequestError) => error.code === -32002);
      await assert.rejects(bobAcp.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hijack' }] }), (error: RequestError) => error.code === -32002);
      const bobSees = await bobAcp.agent.request('session/list', {});
      assert.deepEqual(bobSees.sessions, []);

      await bobMcp.connect(new StreamableHTTPClientTransport(new URL(`${hosted.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${bob.token}` } } }));
      const turns = (await alice.request('GET', `/v1/turns?sessionId=${sessionId}`)).json.data;
      const peek = (await bobMcp.callTool({ name: 'get_turn', arguments: { turnId: turns[0].id } })) as { isError?: boolean; content: { text: string }[] };
      assert.equal(peek.isError, true);
      assert.match(peek.content[0].text, /turn_not_found/);
      const intrude = (await bobMcp.callTool({ name: 'start_turn', arguments: { prompt: 'hijack', sessionId } })) as { isError?: boolean; content: { text: string }[] };
      assert.equal(intrude.isError, true);
      assert.match(intrude.content[0].text, /session_not_found/);
      const listed = (await bobMcp.callTool({ name: 'list_sessions', arguments: {} })) as unknown as { structuredContent: { sessions: unknown[] } };
      assert.deepEqual(listed.structuredContent.sessions, []);
      assert.equal(fake.requests.filter((request) => JSON.stringify(request.body).includes('hijack')).length, 0, 'no hijacking prompt reached a model');
    } finally {
      aliceAcp.close();
      bobAcp.close();
      await bobMcp.close();
    }
  });

  it("refuses bob alice's MCP task: he cannot see, list, fetch or cancel it, and it runs on", async () => {
    const connect = async (token: string) => {
      const mcp = new Client({ name: 'task-agent', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${hosted.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return mcp;
    };
    const aliceMcp = await connect(alice.token);
    const bobMcp = await connect(bob.token);
    try {
      fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'alice-task.txt'] }), callId: 'call_alice_task' }] }, { kind: 'reply', text: 'alice task done' });
      const { task } = await aliceMcp.request({ method: 'tools/call', params: { name: 'start_turn', arguments: { prompt: 'alice task', cwd: alice.workspaceRoot }, task: {} } }, CreateTaskResultSchema);
      await assert.rejects(bobMcp.experimental.tasks.getTask(task.taskId), /not found/i);
      await assert.rejects(bobMcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), /not found/i);
      await assert.rejects(bobMcp.experimental.tasks.cancelTask(task.taskId), /not found/i);
      assert.deepEqual((await bobMcp.experimental.tasks.listTasks()).tasks, []);
      assert.ok((await aliceMcp.experimental.tasks.listTasks()).tasks.some((one) => one.taskId === task.taskId));
      const turn = (await alice.request('GET', `/v1/turns/${task.taskId}`)).json;
      assert.notEqual(turn.status, 'cancelled', "bob's cancel reached nothing");
    } finally {
      await aliceMcp.close();
      await bobMcp.close();
    }
  });
});
