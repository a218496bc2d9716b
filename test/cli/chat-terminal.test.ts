import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, fakeProviderModels, waitForStatus, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { chatCommand } from './chat-support.ts';

const SESSION = `agentd-chat-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-t', SESSION, '-S', '-200');
const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

async function waitForScreen(test: RegExp, timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = screen();
    if (test.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`screen never matched ${test}:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('agentd chat in a terminal (tmux)', () => {
  let fake: FakeProvider;
  let server: TestServer;
  before(async () => {
    fake = await startFakeProvider();
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl) });
    const command = chatCommand(['--url', server.url]).map(quote).join(' ');
    tmux('new-session', '-d', '-s', SESSION, '-x', '150', '-y', '50', '-c', server.workspace, `env -u SERVICE_TOKEN ${command}; echo CHAT-EXITED-$?; sleep 60`);
    await waitForScreen(/^›/m);
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', SESSION);
    } catch {
      // already gone
    }
    await server.close();
    await fake.close();
  });

  it('streams a turn, answers an approval with one key, and Ctrl-C cancels, a second one exits', async () => {
    fake.enqueue({ kind: 'reply', reasoning: 'pondering', text: 'Streamed answer from the fake.', chunkDelayMs: 20 });
    tmux('send-keys', '-t', SESSION, 'say hello', 'Enter');
    await waitForScreen(/Streamed answer from the fake\.\n+›/);
    assert.match(screen(), /pondering/);

    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'approved.txt'] }), callId: 'call_touch' }] }, { kind: 'reply', text: 'File made.' });
    tmux('send-keys', '-t', SESSION, 'make a file', 'Enter');
    await waitForScreen(/\[1\] allow_once {2}\[2\] allow_session {2}\[3\] deny/);
    assert.match(screen(), /touch approved\.txt/, 'the prompt shows the command being approved');
    assert.equal(existsSync(join(server.workspace, 'approved.txt')), false);
    tmux('send-keys', '-t', SESSION, '1');
    await waitForScreen(/File made\.\n+›/);
    assert.equal(existsSync(join(server.workspace, 'approved.txt')), true, 'the key allowed the command once');
    assert.match(screen(), /→ allow_once/);

    fake.enqueue({ kind: 'hang', afterText: 'I will talk forever' });
    tmux('send-keys', '-t', SESSION, 'never ends', 'Enter');
    await waitForScreen(/I will talk forever/);
    const { data } = (await server.request('GET', '/v1/turns')).json;
    const running = data[0];
    await waitForStatus(server, running.id, 'running');
    tmux('send-keys', '-t', SESSION, 'C-c');
    await waitForStatus(server, running.id, 'cancelled');
    await waitForScreen(/\[cancelled\]/);
    assert.doesNotMatch(screen(), /CHAT-EXITED/, 'the first Ctrl-C cancelled the turn, the chat goes on');

    tmux('send-keys', '-t', SESSION, 'C-c');
    await waitForScreen(/CHAT-EXITED-0/);
  });
});
