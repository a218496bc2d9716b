// The bundled server (bin/agentd.js → dist/bundle/) finds the bash parser's WebAssembly, which
// scripts/bundle.mjs copies beside it and package.json ships: a shell call is judged by the tree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentd } from '../support/agentd-process.ts';
import { startFakeProvider } from '../support/fake-provider.ts';
import { toolOutputSent } from '../support/harness.ts';
import { http } from '../support/http.ts';
import { fakeProviderModels } from '../support/server.ts';

test('the bundled server judges shell lines with the bundled parser: a hidden or computed command is refused, a plain one runs', async () => {
  const fake = await startFakeProvider();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-bundle-parser-')));
  const workspace = join(dir, 'ws');
  const modelsFile = join(dir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
  mkdirSync(workspace);
  const agentd = await startAgentd(['--yolo', '--state-dir', join(dir, 'state'), '--workspace-root', workspace, '--models-file', modelsFile]);
  try {
    const session = (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
    const call = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('hidden', 'if true; then reboot; fi'), call('computed', 'c=touch; $c made.txt'), call('plain', 'echo parsed-and-ran')] },
      { kind: 'reply', text: 'ok' },
    );
    const turn = (await http('POST', `${agentd.url}/v1/sessions/${session.id}/turns`, { body: { input: 'go' } })).json;
    const deadline = Date.now() + 30_000;
    while (!['completed', 'failed', 'cancelled'].includes((await http('GET', `${agentd.url}/v1/turns/${turn.id}`)).json.status)) {
      assert.ok(Date.now() < deadline, 'the turn ends');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.match(toolOutputSent(fake.requests, 'hidden') ?? '', /reboot stops the machine/);
    assert.match(toolOutputSent(fake.requests, 'computed') ?? '', /the program name is computed at run time/);
    assert.equal(existsSync(join(workspace, 'made.txt')), false);
    assert.match(toolOutputSent(fake.requests, 'plain') ?? '', /parsed-and-ran/);
  } finally {
    await agentd.stop();
    await fake.close();
  }
});
