import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { waitForStatus, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { tmuxChat } from './tmux-chat.ts';

const chat = tmuxChat(`agentd-chat-${process.pid}`);

describe('agentd chat in a terminal (tmux)', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  // registered before the server's hooks, so that the chat ends before its server does
  after(() => chat.kill());
  const started = useServerOnFakeProvider();
  before(async () => {
    ({ fake, server } = started);
    await chat.start(server.url, server.workspace);
  });

  it('streams a turn, answers an approval with one key, and Ctrl-C cancels, a second one exits', async () => {
    fake.enqueue({ kind: 'reply', reasoning: 'pondering', text: 'Streamed answer from the fake.', chunkDelayMs: 20 });
    chat.send('say hello', 'Enter');
    await chat.waitForScreen(/Streamed answer from the fake\.\n+›/);
    assert.match(chat.screen(), /pondering/);

    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'approved.txt'] }), callId: 'call_touch' }] }, { kind: 'reply', text: 'File made.' });
    chat.send('make a file', 'Enter');
    await chat.waitForScreen(/\[1\] allow_once {2}\[2\] allow_session {2}\[3\] deny/);
    assert.match(chat.screen(), /touch approved\.txt/, 'the prompt shows the command being approved');
    assert.equal(existsSync(join(server.workspace, 'approved.txt')), false);
    chat.send('1');
    await chat.waitForScreen(/File made\.\n+›/);
    assert.equal(existsSync(join(server.workspace, 'approved.txt')), true, 'the key allowed the command once');
    assert.match(chat.screen(), /→ allow_once/);

    fake.enqueue({ kind: 'hang', afterText: 'I will talk forever' });
    chat.send('never ends', 'Enter');
    await chat.waitForScreen(/I will talk forever/);
    const { data } = (await server.request('GET', '/v1/turns')).json;
    const running = data[0];
    await waitForStatus(server, running.id, 'running');
    chat.send('C-c');
    await waitForStatus(server, running.id, 'cancelled');
    await chat.waitForScreen(/\[cancelled\]/);
    assert.doesNotMatch(chat.screen(), /CHAT-EXITED/, 'the first Ctrl-C cancelled the turn, the chat goes on');

    chat.send('C-c');
    await chat.waitForScreen(/CHAT-EXITED-0/);
  });
});
