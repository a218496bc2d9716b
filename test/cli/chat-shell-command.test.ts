import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { runPipedChat } from './chat-support.ts';

describe('agentd chat: a !command line', () => {
  let fake: FakeProvider;
  let workspace: string;
  let stateDir: string;
  before(async () => {
    fake = await startFakeProvider();
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-bang-ws-')));
    stateDir = mkdtempSync(join(tmpdir(), 'agentd-chat-bang-state-'));
    writeFileSync(join(stateDir, 'models.json'), JSON.stringify(fakeProviderModels(fake.baseUrl)));
  });
  after(async () => {
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('runs the command in the session cwd, shows its output, and only the next line asks the model', async () => {
    writeFileSync(join(workspace, 'marker-file.txt'), 'x');
    fake.enqueue({ kind: 'reply', text: 'saw the listing' });
    const before = fake.requests.length;
    const { code, stdout, stderr } = await runPipedChat(['--models-file', join(stateDir, 'models.json'), '--state-dir', stateDir], workspace, '!ls\nwhat is there?\n');
    assert.equal(code, 0, stderr);
    assert.match(stdout, /marker-file\.txt/);
    assert.match(stdout, /^saw the listing$/m);
    assert.equal(fake.requests.length, before + 1, 'the command asked the model nothing');
    assert.ok(JSON.stringify(fake.requests.at(-1)!.body.input).includes('marker-file.txt'), 'the next request carries the output');
  });
});
