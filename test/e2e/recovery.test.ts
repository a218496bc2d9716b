import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { BACKENDS, createBackend } from '../support/backends.ts';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider } from '../support/fake-provider.ts';
import { http } from '../support/http.ts';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

/** agentd as a real child process, so it can die the hard way (SIGKILL) mid-turn. */
async function spawnAgentd(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--log-level', 'warn', ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 20_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`agentd did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { child, url: output.match(/listening on (http:\/\/\S+)/)![1] };
}

for (const backend of BACKENDS) {
  describe(`restart recovery on ${backend}`, () => {
    it('marks turns a killed process left active as failed `interrupted`, and keeps idempotency', async () => {
      const fake = await startFakeProvider();
      const store = await createBackend(backend);
      const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
      const modelsFile = join(store.stateDir, 'models.json');
      writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
      const args = ['--state-dir', store.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, ...(store.databaseUrl ? ['--database-url', store.databaseUrl] : [])];
      try {
        const first = await spawnAgentd(args);
        const session = (await http('POST', `${first.url}/v1/sessions`, { body: {} })).json;
        fake.enqueue({ kind: 'hang', afterText: 'working on it' });
        const clientRequestId = '4d3c2b1a-0f9e-4d8c-b7a6-958473625140';
        const turn = (await http('POST', `${first.url}/v1/sessions/${session.id}/turns`, { body: { input: 'long job', clientRequestId } })).json;
        await fake.waitForRequests(1);
        first.child.kill('SIGKILL');
        await once(first.child, 'exit');

        const second = await spawnAgentd(args);
        try {
          const after = (await http('GET', `${second.url}/v1/turns/${turn.id}`)).json;
          assert.equal(after.status, 'failed');
          assert.equal(after.error, 'interrupted');
          assert.ok(after.finishedAt);
          // its end is kept in the history, as an owner's end is (issue 40 item 6)
          const history = (await http('GET', `${second.url}/v1/sessions/${session.id}/history`)).json.data;
          assert.deepEqual(history.map((entry: any) => [entry.turn.userText, entry.turn.error]), [['long job', 'interrupted']]);
          const replay = await http('POST', `${second.url}/v1/sessions/${session.id}/turns`, { body: { input: 'long job', clientRequestId } });
          assert.equal(replay.status, 202);
          assert.equal(replay.json.id, turn.id, 'the same admission, after a restart');
          assert.equal(replay.json.status, 'failed');
          const conflict = await http('POST', `${second.url}/v1/sessions/${session.id}/turns`, { body: { input: 'other', clientRequestId } });
          assert.equal(conflict.json.error.code, 'idempotency_conflict');
          fake.enqueue({ kind: 'reply', text: 'fresh start' });
          const next = await http('POST', `${second.url}/v1/sessions/${session.id}/turns`, { body: { input: 'try again' } });
          assert.equal(next.status, 202, 'the session is not busy after recovery');
        } finally {
          second.child.kill('SIGTERM');
          await once(second.child, 'exit');
        }
      } finally {
        await fake.close();
        await store.drop();
      }
    });
  });
}
