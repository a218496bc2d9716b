/**
 * MCP servers connect in the background: agentd serves /healthz and /readyz while a server is still
 * starting (or never answers), /readyz names the servers still pending without
 * turning unready, a slow server's tools join an existing session at its next model request, and
 * stopping agentd ends a server that is still being connected to.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, fakeProviderModels, waitForTurn } from '../support/server.ts';
import { startFakeProvider, type FakeRequest } from '../support/fake-provider.ts';
import { STDIO_FIXTURE, eventually } from './support.ts';

const directory = mkdtempSync(join(tmpdir(), 'agentd-mcp-background-'));
const hungPidFile = join(directory, 'hung.pid');
const slowMayStart = join(directory, 'slow-may-start');
const configFile = join(directory, 'mcp.json');
// "hung" starts and reads its stdin but never answers initialize; "slow" answers once the test lets it
writeFileSync(configFile, JSON.stringify({
  mcpServers: {
    hung: { command: process.execPath, args: ['-e', "require('fs').writeFileSync(process.env.PID_FILE, String(process.pid)); process.stdin.resume()"], env: { PID_FILE: hungPidFile } },
    slow: { command: process.execPath, args: ['--import', 'tsx', STDIO_FIXTURE], env: { MCP_TEST_START_WHEN_EXISTS: slowMayStart } },
  },
}));

const toolNames = (request: FakeRequest): string[] => (request.body.tools ?? []).map((tool: { name: string }) => tool.name);
const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('MCP servers that are slow or hung at start-up', () => {
  it('do not hold start-up; /readyz names them; a late server joins a running session; stopping ends the hung one', async () => {
    const fake = await startFakeProvider();
    const server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), args: ['--mcp-config', configFile], captureLogs: true });
    let closed = false;
    try {
      // Listening while the hung server's first attempt is still in flight: it ends only at the
      // 15 s connect timeout, with an "unavailable" line, which start-up used to wait for.
      const unavailable = () => server.logs().filter((line) => line.includes('"mcpServer":"hung"') && line.includes('MCP server unavailable'));
      assert.deepEqual(unavailable(), []);
      assert.deepEqual((await server.request('GET', '/healthz')).json, { ok: true });
      const ready = await server.request('GET', '/readyz');
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.json, { ready: true, instance: ready.json.instance, pending: { mcp: ['hung', 'slow'] } });

      const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      fake.enqueue({ kind: 'reply', text: 'no MCP tools yet' });
      const early = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'which tools?' } })).json;
      assert.equal((await waitForTurn(server, early.id)).status, 'completed');
      assert.ok(!toolNames(fake.requests.at(-1)!).some((name) => name.startsWith('mcp__')), 'nothing of a pending server is offered');
      assert.ok(toolNames(fake.requests.at(-1)!).includes('shell'));

      // the slow one connects: it leaves the pending list, the hung one stays in it
      writeFileSync(slowMayStart, '');
      const deadline = Date.now() + 20_000;
      let pending: unknown;
      do {
        await new Promise((resolve) => setTimeout(resolve, 100));
        pending = (await server.request('GET', '/readyz')).json.pending;
      } while (JSON.stringify(pending) !== JSON.stringify({ mcp: ['hung'] }) && Date.now() < deadline);
      assert.deepEqual(pending, { mcp: ['hung'] });

      fake.enqueue({ kind: 'reply', text: 'now with MCP tools' });
      const late = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'and now?' } })).json;
      assert.equal((await waitForTurn(server, late.id)).status, 'completed');
      assert.ok(toolNames(fake.requests.at(-1)!).includes('mcp__slow__echo'), 'the session that existed before gets the tools');

      // stopping ends the hung server's attempt in flight instead of leaving it running until its timeout
      await eventually(() => existsSync(hungPidFile));
      const hungPid = Number(readFileSync(hungPidFile, 'utf8'));
      assert.ok(isRunning(hungPid));
      await server.close();
      closed = true;
      assert.deepEqual(unavailable(), [], 'stopped before its connect timed out');
      await eventually(() => !isRunning(hungPid), 5_000);
    } finally {
      if (!closed) await server.close();
      await fake.close();
    }
  });
});
