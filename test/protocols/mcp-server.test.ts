import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { mcpClient, useMcpAgent } from './mcp-support.ts';

const TOKEN = 'mcp-server-test-token-0123456789abcdef0123';
const touch = (callId: string, file: string) => ({ name: 'shell', arguments: JSON.stringify({ command: ['touch', file] }), callId });

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult & { structuredContent?: any }> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

describe('agentd as an MCP server at /mcp', () => {
  const mcp = useMcpAgent(TOKEN);

  it('lists its five tools, each with an input and an output schema', async () => {
    const { tools } = await mcp.agent.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['answer_request', 'cancel_turn', 'get_turn', 'list_sessions', 'start_turn']);
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.equal(tool.outputSchema?.type, 'object', tool.name);
    }
    assert.deepEqual(tools.find((tool) => tool.name === 'start_turn')!.inputSchema.required, ['prompt']);
  });

  it('start_turn runs a turn in a new session and returns its answer; list_sessions shows the session', async () => {
    mcp.fake.enqueue({ kind: 'reply', text: 'hello from agentd' });
    const result = await call(mcp.agent, 'start_turn', { prompt: 'say hello', cwd: mcp.server.workspace });
    assert.equal(result.isError, undefined);
    assert.equal(result.structuredContent.status, 'completed');
    assert.equal(result.structuredContent.text, 'hello from agentd');
    const listed = await call(mcp.agent, 'list_sessions', {});
    assert.ok(listed.structuredContent.sessions.some((session: any) => session.sessionId === result.structuredContent.sessionId));
  });

  it('without elicitation a question leaves the turn waiting; answer_request answers it and returns the ended turn with its changes', async () => {
    mcp.fake.enqueue({ kind: 'reply', toolCalls: [touch('call_mcp_wait', 'from-mcp.txt')] }, { kind: 'reply', text: 'file made' });
    const waiting = await call(mcp.agent, 'start_turn', { prompt: 'make a file', cwd: mcp.server.workspace });
    assert.equal(waiting.structuredContent.status, 'waiting');
    assert.equal(waiting.structuredContent.request.kind, 'tool_approval');
    assert.deepEqual(waiting.structuredContent.request.options, ['allow_once', 'allow_session', 'deny']);
    const looked = await call(mcp.agent, 'get_turn', { turnId: waiting.structuredContent.turnId });
    assert.equal(looked.structuredContent.status, 'waiting');
    const ended = await call(mcp.agent, 'answer_request', { requestId: waiting.structuredContent.request.requestId, option: 'allow_once' });
    assert.equal(ended.structuredContent.status, 'completed');
    assert.equal(ended.structuredContent.text, 'file made');
    assert.deepEqual(ended.structuredContent.changes.map((change: any) => [change.path, change.kind]), [['from-mcp.txt', 'created']]);
    assert.equal(existsSync(join(mcp.server.workspace, 'from-mcp.txt')), true);
  });

  it('with elicitation the question goes to the MCP client, whose answer the turn gets: deny keeps the file from being made', async () => {
    const asked: string[][] = [];
    const elicitor = await mcpClient(mcp.server.url, TOKEN, (_message, options) => (asked.push(options), { option: 'deny', text: 'not today' }));
    try {
      mcp.fake.enqueue({ kind: 'reply', toolCalls: [touch('call_mcp_elicit', 'refused.txt')] }, { kind: 'reply', text: 'understood' });
      const result = await call(elicitor, 'start_turn', { prompt: 'make another file', cwd: mcp.server.workspace });
      assert.equal(result.structuredContent.status, 'completed');
      assert.deepEqual(asked, [['allow_once', 'allow_session', 'deny']]);
      assert.equal(existsSync(join(mcp.server.workspace, 'refused.txt')), false);
      assert.match(JSON.stringify(mcp.fake.requests.at(-1)!.body), /not today/);
    } finally {
      await elicitor.close();
    }
  });

  it('cancel_turn cancels a running turn', async () => {
    mcp.fake.enqueue({ kind: 'reply', toolCalls: [touch('call_mcp_cancel', 'never.txt')] });
    const waiting = await call(mcp.agent, 'start_turn', { prompt: 'wait for me', cwd: mcp.server.workspace });
    const cancelled = await call(mcp.agent, 'cancel_turn', { turnId: waiting.structuredContent.turnId });
    assert.equal(cancelled.structuredContent.status, 'cancelled');
  });

  it('answers bad input with tool errors that say what is wrong, and keeps serving', async () => {
    const outside = await call(mcp.agent, 'start_turn', { prompt: 'escape', cwd: tmpdir() });
    assert.equal(outside.isError, true);
    assert.match((outside.content[0] as { text: string }).text, /workspace/);
    const unknown = await call(mcp.agent, 'get_turn', { turnId: '00000000-0000-4000-8000-000000000000' });
    assert.equal(unknown.isError, true);
    assert.match((unknown.content[0] as { text: string }).text, /turn_not_found/);
    const badOption = await call(mcp.agent, 'answer_request', { requestId: '00000000-0000-4000-8000-000000000000', option: 'allow_once' });
    assert.equal(badOption.isError, true);
    const empty = await call(mcp.agent, 'start_turn', { prompt: '' });
    assert.equal(empty.isError, true, 'the input schema refuses an empty prompt');
    const garbled = await mcp.server.request('POST', '/mcp', { rawBody: '{"jsonrpc":"2.0","id":1,"method":', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } });
    assert.equal(garbled.status, 400);
    assert.equal(garbled.json.error.code, -32700);
    const anonymous = await mcp.server.request('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.json.error.code, 'unauthorized');
    assert.equal((await call(mcp.agent, 'list_sessions', {})).isError, undefined, 'still serving');
  });
});

describe('an MCP session that ends gives back its event stream (read inside the process)', () => {
  const started = useServerOnFakeProvider({ env: { SERVICE_TOKEN: TOKEN }, args: ['--max-event-subscribers', '1'] });

  it('with room for one subscriber, a second MCP session runs its turn once the first has ended, and the API gets a stream after both', async () => {
    const { server, fake } = started;
    const first = await mcpClient(server.url, TOKEN);
    fake.enqueue({ kind: 'reply', text: 'first' });
    assert.equal((await call(first, 'start_turn', { prompt: 'one', cwd: server.workspace })).structuredContent.text, 'first');
    assert.equal(await eventStreamStatus(server.url), 429, 'the first session holds the one stream while it lives');
    await (first.transport as StreamableHTTPClientTransport).terminateSession();
    await first.close();

    const second = await mcpClient(server.url, TOKEN);
    try {
      fake.enqueue({ kind: 'reply', text: 'second' });
      const result = await call(second, 'start_turn', { prompt: 'two', cwd: server.workspace });
      assert.equal(result.isError, undefined, JSON.stringify(result.content));
      assert.equal(result.structuredContent.text, 'second');
      await (second.transport as StreamableHTTPClientTransport).terminateSession();
    } finally {
      await second.close();
    }
    assert.equal(await eventStreamStatus(server.url), 200, 'both sessions gave their stream back');
  });
});

/** The status GET /v1/events answers with; a stream that opens is closed at once. */
async function eventStreamStatus(url: string): Promise<number> {
  const controller = new AbortController();
  const response = await fetch(`${url}/v1/events`, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' }, signal: controller.signal });
  controller.abort();
  return response.status;
}
