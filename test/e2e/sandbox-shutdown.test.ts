/** SIGTERM to a real agentd with a sandboxed command running: no runner, bubblewrap or command survives it. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { scratchDirectory } from '../sandbox/support.ts';
import { processesWith, runnerScript, waitUntil } from './sandbox-support.ts';

describe('agentd stopped by SIGTERM leaves no sandbox behind', () => {
  it('the runner, its bubblewrap and the command it ran end with the server', async () => {
    const { startFakeProvider } = await import('../support/fake-provider.ts');
    const { fakeProviderModels } = await import('../support/server.ts');
    const fake = await startFakeProvider();
    const state = scratchDirectory('agentd-e2e-sigterm-');
    const workspace = scratchDirectory('agentd-e2e-sigterm-ws-');
    writeFileSync(join(state, 'models.json'), JSON.stringify(fakeProviderModels(fake.baseUrl)));
    const agentd = spawn(
      process.execPath,
      [new URL('../../bin/agentd.js', import.meta.url).pathname, 'serve', '--port', '0', '--state-dir', state, '--workspace-root', workspace, '--models-file', join(state, 'models.json'), '--sandbox-runner', runnerScript()],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      let out = '';
      agentd.stdout.on('data', (chunk) => (out += chunk));
      await waitUntil(() => /listening on/.test(out), 60_000);
      const url = /listening on (\S+)/.exec(out)![1];
      const post = async (path: string, body: unknown): Promise<any> => (await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
      fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'sleep 421' }), callId: 'call_sleep' }] });
      const session = await post('/v1/sessions', {});
      await post(`/v1/sessions/${session.id}/turns`, { input: 'sleep' });
      await waitUntil(() => processesWith('sleep 421').length > 0, 30_000);
      assert.ok(processesWith(`agentd-sandbox --workspace ${workspace}`).length > 0, 'the runner is up');
      agentd.kill('SIGTERM');
      const [code] = await once(agentd, 'exit');
      assert.equal(code, 0);
      await waitUntil(() => processesWith(`--workspace ${workspace}`).length === 0 && processesWith(workspace).length === 0 && processesWith('sleep 421').length === 0, 10_000);
    } finally {
      if (agentd.exitCode === null) agentd.kill('SIGKILL');
      await fake.close();
    }
  });
});
