/**
 * MCP servers connect in the background: agentd serves /healthz and /readyz at once, however long
 * a server takes (or if it never answers), /readyz names the servers still pending without
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
const configFile = join(directory, 'mcp.json');
// "hung" starts and reads its stdin but never answers initialize; "slow" answers after 5 s
writeFileSync(configFile, JSON.stringify({
  mcpServers: {
    hung: { command: process.execPath, args: ['-e', "require('fs').writeFileSync(process.env.PID_FILE, String(process.pid)); process.stdin.resume()"], env: { PID_FILE: hungPidFile } },
    slow: { command: process.execPath, args: ['--import', 'tsx', STDIO_FIXTURE], env: { MCP_TEST_START_DELAY_MS: '5000' } },
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
    const startedAt = Date.now();
    const server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), args: ['--mcp-config', configFile] });
    let closed = false;
    try {
      // the hung server alone would have held start-up for its 15 s connect timeout
      assert.ok(Date.now() - startedAt < 4_000, `start-up took ${Date.now() - startedAt} ms`);
      assert.deepEqual((await server.request('GET', '/healthz')).json, { ok: true });
      const ready = await server.request('GET', '/readyz');
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.json, { ready: true, pending: { mcp: ['hung', 'slow'] } });

      const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      fake.enqueue({ kind: 'reply', text: 'no MCP tools yet' });
      const early = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'which tools?' } })).json;
      assert.equal((await waitForTurn(server, early.id)).status, 'completed');
      assert.ok(!toolNames(fake.requests.at(-1)!).some((name) => name.startsWith('mcp__')), 'nothing of a pending server is offered');
      assert.ok(toolNames(fake.requests.at(-1)!).includes('shell'));

      // the slow one connects: it leaves the pending list, the hung one stays in it
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

      // stopping does not wait out the hung server's connect, and does not leave it running
      await eventually(() => existsSync(hungPidFile));
      const hungPid = Number(readFileSync(hungPidFile, 'utf8'));
      assert.ok(isRunning(hungPid));
      const stoppingAt = Date.now();
      await server.close();
      closed = true;
      assert.ok(Date.now() - stoppingAt < 5_000, `stopping took ${Date.now() - stoppingAt} ms`);
      await eventually(() => !isRunning(hungPid), 5_000);
    } finally {
      if (!closed) await server.close();
      await fake.close();
    }
  });
});
