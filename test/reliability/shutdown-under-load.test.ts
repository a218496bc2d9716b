// Issue 17 §6: SIGTERM to the real agentd with 50 running turns (streaming, and running approved
// tool processes): it exits 0 within a bounded time, every turn is durably `cancelled` (not
// `interrupted`), and no tool process survives.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeProvider } from '../support/fake-provider.ts';
import { createBackend } from '../support/backends.ts';
import { fakeProviderModels } from '../support/server.ts';
import { orphanToolProcesses, processesWith, requester, startAgentd, stopGracefully } from './support/crash-rounds.ts';

const TURNS = 50;
/** CONTRACT.md §16: 10 s after the signal plus the time live turns need to be recorded. */
const EXIT_BOUND_MS = 10_000;

describe('shutdown under load', () => {
  it(`SIGTERM with ${TURNS} running turns cancels each durably, kills their tools and exits 0`, async () => {
    const fake = await startFakeProvider();
    const backend = await createBackend('sqlite');
    const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-shutdown-ws-')));
    const modelsFile = join(backend.stateDir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    const marker = `sleep 9.${Date.now() % 100_000}7`;
    try {
      for (let index = 0; index < TURNS; index++) {
        fake.enqueue(
          index % 2 === 0
            ? { kind: 'reply', text: 'word '.repeat(400), chunkDelayMs: 100 }
            : { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: `${marker} && echo done` }) }] },
        );
      }
      let agentd = await startAgentd(backend, workspace, modelsFile, ['--max-concurrent-turns', String(TURNS), '--max-queued-turns', String(TURNS)]);
      let request = requester(agentd.url);
      const turnIds: string[] = [];
      for (let index = 0; index < TURNS; index++) {
        const session = (await request('POST', '/v1/sessions', {})).json;
        turnIds.push((await request('POST', `/v1/sessions/${session.id}/turns`, { input: `busy ${index}` })).json.id);
      }
      // Approve every command, then wait until all turns run and the tools are alive.
      const deadline = Date.now() + 30_000;
      for (;;) {
        for (const pending of (await request('GET', '/v1/requests')).json.data) await request('POST', `/v1/requests/${pending.id}/resolve`, { decision: 'allow_once' });
        const statuses = await Promise.all(turnIds.map(async (id) => (await request('GET', `/v1/turns/${id}`)).json.status));
        if (statuses.every((status) => status === 'running') && processesWith(marker).length >= TURNS / 4) break;
        assert.ok(Date.now() < deadline, `not all running: ${statuses.join(',')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const toolsAlive = processesWith(marker).length;

      const signalled = Date.now();
      const exitCode = await stopGracefully(agentd.child);
      const exitMs = Date.now() - signalled;
      assert.equal(exitCode, 0);
      assert.ok(exitMs < EXIT_BOUND_MS, `exited after ${exitMs} ms`);
      assert.deepEqual(await orphanToolProcesses(marker, 1_000), [], `none of the ${toolsAlive} tool processes survives`);

      agentd = await startAgentd(backend, workspace, modelsFile);
      request = requester(agentd.url);
      const after = await Promise.all(turnIds.map(async (id) => (await request('GET', `/v1/turns/${id}`)).json));
      assert.deepEqual(after.filter((turn) => turn.status !== 'cancelled').map((turn) => `${turn.id} ${turn.status} ${turn.error}`), []);
      console.log(`shutdown: ${TURNS} turns, ${toolsAlive} tool processes, exit 0 after ${exitMs} ms`);
      await stopGracefully(agentd.child);
    } finally {
      await fake.close();
      await backend.drop();
    }
  });
});
