/**
 * `!command` in the terminal client as a person types it (tmux): the line runs as the shell tool
 * through the policy (asking as the model's own call would), its output is shown, the model is asked nothing; a command the policy never
 * runs is refused on screen with its reason, and the next prompt still goes to the model.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { tmuxChat, type TmuxChat } from './tmux-chat.ts';

describe('agentd chat, !command (tmux)', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const chats: TmuxChat[] = [];
  after(() => chats.forEach((chat) => chat.kill()));
  const started = useServerOnFakeProvider();
  before(() => ({ fake, server } = started));

  it('runs !echo without the model, refuses !mkfs with the reason, and the next prompt reaches the model', async () => {
    const chat = tmuxChat(`agentd-chat-bang-${process.pid}`, { joinWrappedLines: true });
    chats.push(chat);
    await chat.start(server.url, server.workspace);

    chat.send('-l', '!echo said-by-$((40+2))');
    chat.send('Enter');
    // not a read-only line (an expansion): the same approval as the model's own call, by key
    await chat.waitForScreen(/\[1\] allow_once {2}\[2\] allow_session/);
    chat.send('1');
    await chat.waitForScreen(/Exit code: 0[^\n]*\n *│ said-by-42$/m);
    assert.equal(fake.requests.length, 0, 'the model was asked nothing');

    chat.send('-l', '!mkfs.ext4 /dev/sda1');
    chat.send('Enter');
    await chat.waitForScreen(/never run/);
    assert.equal(fake.requests.length, 0);

    fake.enqueue({ kind: 'reply', text: 'The model answers.' });
    chat.send('-l', 'and now you');
    chat.send('Enter');
    await chat.waitForScreen(/The model answers\./);
    assert.equal(fake.requests.length, 1);
    assert.match(JSON.stringify(fake.requests[0].body), /said-by-42/, 'the command and its output are in the history the model reads');
  });
});
