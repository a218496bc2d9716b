/**
 * The terminal client's keys and commands next to Claude Code's and opencode's (CONTRACT.md §24),
 * driven as a person would, in tmux: a line continued with `\`, a bracketed paste as one prompt,
 * Tab completing a command, /plan, /effort, /budget and /undo, and the footer under each turn.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeProviderModels, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { tmuxChat, type TmuxChat } from './tmux-chat.ts';

describe('agentd chat, keys and commands (tmux)', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const chats: TmuxChat[] = [];
  const newChat = (name: string) => {
    const chat = tmuxChat(`agentd-chat-tui-${name}-${process.pid}`, { joinWrappedLines: true });
    chats.push(chat);
    return chat;
  };
  after(() => chats.forEach((chat) => chat.kill()));
  const started = useServerOnFakeProvider({ models: (baseUrl) => fakeProviderModels(baseUrl, { contextWindow: 200_000 }) });
  before(() => ({ fake, server } = started));
  /** the text of the user message of the model's latest request */
  const lastPrompt = () => JSON.stringify(fake.requests.at(-1)?.body);

  it('a line ending in \\ continues on the next: both lines are one prompt; the footer follows the answer', async () => {
    const chat = newChat('continued');
    await chat.start(server.url, server.workspace);
    const before = fake.requests.length;
    fake.enqueue({ kind: 'reply', text: 'Two lines read.' });
    chat.send('-l', 'first line\\');
    chat.send('Enter');
    await chat.waitForScreen(/^… /m);
    chat.send('-l', 'second line');
    chat.send('Enter');
    await chat.waitForScreen(/Two lines read\./);
    assert.equal(fake.requests.length, before + 1, 'one turn');
    assert.ok(lastPrompt().includes('first line\\nsecond line'), lastPrompt());
    // the footer: model, mode, directory, the session's tokens and context
    await chat.waitForScreen(new RegExp(`─ fake-responses · default mode · ${server.workspace.replace(/[/.]/g, '\\$&')} · session \\d+ tokens · (?:\\$[\\d.]+ · )?context \\d+% of 200k`));
  });

  it('Alt+Enter (what a terminal set up for it sends for Shift+Enter) continues the prompt on a new line', async () => {
    const chat = newChat('alt-enter');
    await chat.start(server.url, server.workspace);
    const before = fake.requests.length;
    fake.enqueue({ kind: 'reply', text: 'Both parts read.' });
    chat.send('-l', 'part one');
    chat.send('M-Enter');
    await chat.waitForScreen(/^… /m);
    chat.send('-l', 'part two');
    chat.send('Enter');
    await chat.waitForScreen(/Both parts read\./);
    assert.equal(fake.requests.length, before + 1, 'one turn');
    assert.ok(lastPrompt().includes('part one\\npart two'), lastPrompt());
  });

  it('Shift+Enter, sent as a key of its own once the chat turns on modifyOtherKeys, continues the prompt; so does xterm\'s form of it', async () => {
    const chat = tmuxChat(`agentd-chat-tui-shift-enter-${process.pid}`, { joinWrappedLines: true, extendedKeys: true });
    chats.push(chat);
    await chat.start(server.url, server.workspace);
    const before = fake.requests.length;
    fake.enqueue({ kind: 'reply', text: 'Three parts read.' });
    chat.send('-l', 'part one');
    chat.send('S-Enter');
    await chat.waitForScreen(/^… /m);
    chat.send('-l', 'part two');
    // xterm sends CSI 27;2;13~ (readline alone would leave `13~` in the line)
    chat.send('-l', '\u001b[27;2;13~');
    await chat.waitForScreen(/^… part two\n… *$/m);
    chat.send('-l', 'part three');
    chat.send('Enter');
    await chat.waitForScreen(/Three parts read\./);
    assert.equal(fake.requests.length, before + 1, 'one turn');
    assert.ok(lastPrompt().includes('part one\\npart two\\npart three'), lastPrompt());
    chat.send('C-c');
    await chat.waitForScreen(/CHAT-EXITED-0/);
  });

  it('a bracketed paste is one prompt, shown as [pasted N lines] until Enter sends it whole', async () => {
    const chat = newChat('paste');
    await chat.start(server.url, server.workspace);
    const before = fake.requests.length;
    fake.enqueue({ kind: 'reply', text: 'Trace read.' });
    chat.paste('Error: boom\n    at one (a.js:1)\n    at two (b.js:2)');
    await chat.waitForScreen(/› \[pasted 3 lines\]/);
    assert.equal(fake.requests.length, before, 'nothing is sent before Enter');
    chat.send('-l', 'why?');
    chat.send('Enter');
    await chat.waitForScreen(/Trace read\./);
    assert.equal(fake.requests.length, before + 1, 'one turn for the whole paste');
    assert.ok(lastPrompt().includes('Error: boom\\n    at one (a.js:1)\\n    at two (b.js:2) why?'), lastPrompt());
  });

  it('Tab completes a command; /plan toggles plan mode (shown in the footer), /effort and /budget set the session', async () => {
    const chat = newChat('commands');
    await chat.start(server.url, server.workspace);
    const session = () => server.request('GET', `/v1/sessions/${sessionId}`).then((response) => response.json);
    const sessionId = (await server.request('GET', '/v1/sessions?limit=1')).json.data[0].id;
    chat.send('-l', '/pl');
    chat.send('Tab');
    await chat.waitForScreen(/› \/plan$/m);
    chat.send('Enter');
    await chat.waitForScreen(/plan mode: the model reads and plans/);
    assert.equal((await session()).planMode, true);
    await chat.waitForScreen(/─ fake-responses · plan mode · /);
    chat.send('-l', '/plan');
    chat.send('Enter');
    await chat.waitForScreen(/plan mode left/);
    assert.equal((await session()).planMode, false);

    chat.send('-l', '/effort high');
    chat.send('Enter');
    await chat.waitForScreen(/^effort high$/m);
    assert.equal((await session()).effort, 'high');
    chat.send('-l', '/budget 5000');
    chat.send('Enter');
    await chat.waitForScreen(/^budget 5000 tokens$/m);
    assert.equal((await session()).budget.tokens, 5000);
  });

  it('@path completes with Tab and attaches the file to the turn', async () => {
    mkdirSync(join(server.workspace, 'notes'), { recursive: true });
    writeFileSync(join(server.workspace, 'notes', 'todo.md'), 'buy milk, then write tests\n');
    const chat = newChat('mention');
    await chat.start(server.url, server.workspace);
    fake.enqueue({ kind: 'reply', text: 'Milk first.' });
    chat.send('-l', 'what is in @notes/to');
    chat.send('Tab');
    await chat.waitForScreen(/› what is in @notes\/todo\.md$/m);
    chat.send('Enter');
    await chat.waitForScreen(/attached notes\/todo\.md \(27 bytes\)[\s\S]*Milk first\./);
    // the server keeps the attachment and tells the model where it is
    assert.match(lastPrompt(), /what is in @notes\/todo\.md\\n\[attached file todo\.md \(text\/markdown, 27 bytes\) at /);
  });

  it('@query + Tab picks files fuzzily, best first (git\'s list, the ignored left out); Tab again moves to the next', async () => {
    const project = join(server.workspace, 'picker');
    for (const file of ['src/cli/chat/chat.ts', 'src/cli/chat/chat-setup.ts', 'src/cli/main.ts', 'docs/CHAT.md', 'ignored/chat-cache.ts']) {
      mkdirSync(join(project, file, '..'), { recursive: true });
      writeFileSync(join(project, file), `// ${file}\n`);
    }
    writeFileSync(join(project, '.gitignore'), 'ignored/\n');
    execFileSync('git', ['init', '-q'], { cwd: project });
    const chat = newChat('fuzzy');
    await chat.start(server.url, project);
    chat.send('-l', 'read @srcchat');
    chat.send('Tab');
    await chat.waitForScreen(/@srcchat: 2 matches, Tab for the next\n\s+1\. src\/cli\/chat\/chat\.ts\n\s+2\. src\/cli\/chat\/chat-setup\.ts\n[\s\S]*› read @src\/cli\/chat\/chat\.ts$/m);
    assert.doesNotMatch(chat.screen(), /chat-cache/, 'git ignores it: so does the picker');
    chat.send('Tab');
    await chat.waitForScreen(/› read @src\/cli\/chat\/chat-setup\.ts$/m);
    fake.enqueue({ kind: 'reply', text: 'Setup read.' });
    chat.send('Enter');
    await chat.waitForScreen(/attached src\/cli\/chat\/chat-setup\.ts \(\d+ bytes\)[\s\S]*Setup read\./);
  });

  it('/undo reverts the last turn through the server and names the files', async () => {
    const chat = newChat('undo');
    await chat.start(server.url, server.workspace);
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo undone > undo-me.txt' }), callId: 'call_undo' }] },
      { kind: 'reply', text: 'Written.' },
    );
    chat.send('-l', 'write undo-me.txt');
    chat.send('Enter');
    await chat.waitForScreen(/\[1\] allow_once/);
    chat.send('1');
    await chat.waitForScreen(/Written\./);
    assert.equal(readFileSync(join(server.workspace, 'undo-me.txt'), 'utf8'), 'undone\n');
    chat.send('-l', '/undo');
    chat.send('Enter');
    await chat.waitForScreen(/reverted the last turn's changes to 1 file:\n\s+undo-me\.txt/);
    assert.equal(existsSync(join(server.workspace, 'undo-me.txt')), false);
  });
});
