/**
 * The footer of the terminal client (CONTRACT.md §24), in tmux: pinned to the terminal's last row
 * under a scroll region, it shows model, mode, cwd, tokens, cost and context while a turn streams
 * and after, says "plan mode" after /plan, follows a resize and is taken away at exit.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fakeProviderModels, waitForStatus, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { tmuxChat, type TmuxChat } from './tmux-chat.ts';

describe('agentd chat, the footer (tmux)', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const chats: TmuxChat[] = [];
  after(() => chats.forEach((chat) => chat.kill()));
  const started = useServerOnFakeProvider({ models: (baseUrl) => fakeProviderModels(baseUrl, { contextWindow: 200_000 }) });
  before(() => ({ fake, server } = started));

  it('stays on the last row while a turn streams and after, shows plan mode after /plan, follows a resize, and goes at exit', async () => {
    const chat = tmuxChat(`agentd-chat-footer-${process.pid}`);
    chats.push(chat);
    /** the terminal's last row (tmux captures every row of the screen, blank ones too) */
    const lastRow = () => chat.screen().replace(/\n$/, '').split('\n').at(-1) ?? '';
    const waitForLastRow = async (test: RegExp) => {
      await chat.waitForScreen(/[\s\S]/);
      const deadline = Date.now() + 30_000;
      while (!test.test(lastRow())) {
        if (Date.now() > deadline) throw new Error(`the last row never matched ${test}:\n${chat.screen()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const footer = (mode: string) => new RegExp(`^─ fake-responses · ${mode} · ${server.workspace.replace(/[/.]/g, '\\$&')} · session \\d+ tokens · (?:\\$[\\d.]+ · )?context \\d+% of 200k`);

    await chat.start(server.url, server.workspace);
    await waitForLastRow(footer('default mode'));

    fake.enqueue({ kind: 'hang', afterText: 'Still talking' });
    chat.send('-l', 'talk');
    chat.send('Enter');
    await chat.waitForScreen(/Still talking/);
    const running = (await server.request('GET', '/v1/turns')).json.data[0];
    await waitForStatus(server, running.id, 'running');
    assert.match(lastRow(), footer('default mode'), 'the footer stays while the answer streams');
    assert.match(chat.screen(), /Still talking[\s\S]*Ctrl-C cancels\n[\s\S]*─ fake-responses[^\n]*\n?$/, 'the status line is above it');
    chat.send('C-c');
    await chat.waitForScreen(/\[cancelled\]/);
    await waitForLastRow(footer('default mode'));

    chat.send('-l', '/plan');
    chat.send('Enter');
    await chat.waitForScreen(/plan mode: the model reads and plans/);
    await waitForLastRow(footer('plan mode'));

    chat.resize(150, 30);
    await waitForLastRow(footer('plan mode'));

    chat.send('C-c');
    await chat.waitForScreen(/CHAT-EXITED-0/);
    assert.doesNotMatch(lastRow(), /─ fake-responses/, 'the footer row is emptied at exit');
  });
});
