import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { McpManager } from '../../src/mcp/mcp-manager.ts';
import { startHttpMcpServer } from './fixtures/http-server.ts';
import { capturedLogger, eventually, toolsWhere } from './support.ts';

const SECRET = 'Bearer http-mcp-credential-9f8e7d';

describe('an MCP server over streamable HTTP', () => {
  it('lists its tools, sends the configured headers, calls a tool and follows list_changed', async () => {
    const server = await startHttpMcpServer();
    const { logger } = capturedLogger();
    const manager = new McpManager([{ kind: 'http', name: 'remote', url: server.url, headers: { authorization: SECRET } }], { logger });
    try {
      await manager.start();
      const echo = manager.tools().find((tool) => tool.name === 'mcp__remote__echo');
      assert.ok(echo);
      assert.equal(echo.readOnly, true);
      assert.ok(server.headers.length > 0 && server.headers.every((headers) => headers.authorization === SECRET));
      assert.equal((await manager.call('mcp__remote__echo', { text: 'over http' })).text, 'echo: over http');
      await manager.call('mcp__remote__add_tool', {});
      await toolsWhere(manager, () => manager.tools().some((tool) => tool.name === 'mcp__remote__late'));
    } finally {
      await manager.close();
      await server.close();
    }
  });

  it('a server that refuses, echoing the credentials back: logged without them, no tools, retried', async () => {
    const server = await startHttpMcpServer({ refuseWith: 500 });
    const { logger, lines, entries } = capturedLogger();
    const manager = new McpManager([{ kind: 'http', name: 'remote', url: server.url, headers: { authorization: SECRET } }], { logger, initialBackoffMs: 20, maxBackoffMs: 40 });
    try {
      await manager.start();
      assert.deepEqual(manager.tools(), []);
      await eventually(() => entries().filter((entry) => entry.msg === 'MCP server unavailable; restarting').length >= 2);
      assert.ok(server.headers.length >= 2, 'retried');
      assert.match(lines.join(''), /\[redacted\]/, 'the echoed credential was there to redact');
      assert.doesNotMatch(lines.join(''), /http-mcp-credential-9f8e7d/);
    } finally {
      await manager.close();
      await server.close();
    }
  });

  it('a server that goes away: the failed call reports it, the tools vanish, and they return once it is back', async () => {
    let server = await startHttpMcpServer();
    const port = new URL(server.url).port;
    const { logger } = capturedLogger();
    const manager = new McpManager([{ kind: 'http', name: 'remote', url: server.url, headers: {} }], { logger, initialBackoffMs: 50, maxBackoffMs: 100 });
    try {
      await manager.start();
      assert.ok(manager.tools().length > 0);
      await server.close();
      const call = await manager.call('mcp__remote__echo', { text: 'hello?' });
      assert.equal(call.isError, true);
      assert.deepEqual(manager.tools(), []);
      server = await startHttpMcpServer({ port: Number(port) });
      await toolsWhere(manager, () => manager.tools().some((tool) => tool.name === 'mcp__remote__echo'));
      assert.equal((await manager.call('mcp__remote__echo', { text: 'back' })).text, 'echo: back');
    } finally {
      await manager.close();
      await server.close();
    }
  });
});
