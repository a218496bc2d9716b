import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeProviderModels, waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { toolOutputSent, useServerOnFakeProvider } from '../support/harness.ts';
import { DENIED_OUTPUT } from '../../src/agent/policy/authorize.ts';
import { tmuxChat, type TmuxChat } from './tmux-chat.ts';

/** SGR sequences (colours, bold, dim…) as `tmux capture-pane -e` writes them. */
const SGR = /\u001b\[[0-9;]*m/;

describe('agentd chat in a terminal (tmux)', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const chats: TmuxChat[] = [];
  /** a chat in a tmux session of its own, ended after the suite */
  const newChat = (name: string) => {
    const chat = tmuxChat(`agentd-chat-${name}-${process.pid}`, { joinWrappedLines: true });
    chats.push(chat);
    return chat;
  };
  // registered before the server's hooks, so that the chats end before their server does
  after(() => chats.forEach((chat) => chat.kill()));
  // a known context window, so that the status line can say how full the context is
  const started = useServerOnFakeProvider({ models: (baseUrl) => fakeProviderModels(baseUrl, { contextWindow: 200_000 }) });
  before(() => ({ fake, server } = started));
  const sessionCount = async () => (await server.request('GET', '/v1/sessions?limit=100')).json.data.length;

  it('streams a turn, answers an approval with one key, and Ctrl-C cancels, a second one exits', async () => {
    const chat = newChat('basic');
    await chat.start(server.url, server.workspace);
    fake.enqueue({ kind: 'reply', reasoning: 'pondering', text: 'Streamed answer from the fake.', chunkDelayMs: 20 });
    chat.send('say hello', 'Enter');
    await chat.waitForScreen(/Streamed answer from the fake\.\n+(?:─ .*\n+)?›/);
    assert.match(chat.screen(), /pondering/);

    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'approved.txt'] }), callId: 'call_touch' }] }, { kind: 'reply', text: 'File made.' });
    chat.send('make a file', 'Enter');
    await chat.waitForScreen(/\[1\] allow_once {2}\[2\] allow_session {2}\[3\] deny {2}\[4\] deny, saying why/);
    assert.match(chat.screen(), /touch approved\.txt/, 'the prompt shows the command being approved');
    assert.equal(existsSync(join(server.workspace, 'approved.txt')), false);
    chat.send('1');
    await chat.waitForScreen(/File made\.\n+(?:─ .*\n+)?›/);
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

  it('sends only the words typed after the custom option\'s key, and a deny\'s reason reaches the model', async () => {
    const chat = newChat('answers');
    await chat.start(server.url, server.workspace);
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'ask_question', arguments: JSON.stringify({ question: 'How shall I greet?', options: ['Hello', 'Hi'] }), callId: 'call_ask' }] },
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['rm', '-rf', 'src'] }), callId: 'call_rm' }] },
      { kind: 'reply', text: 'Greeted and kept src.' },
    );
    chat.send('greet me', 'Enter');
    await chat.waitForScreen(/\[1\] Hello {2}\[2\] Hi {2}\[3\] custom\n/);
    chat.send('3');
    await chat.waitForScreen(/^your words: *$/m);
    chat.send('Howdy partner', 'Enter');
    await chat.waitForScreen(/\[4\] deny, saying why/);
    assert.equal(toolOutputSent(fake.requests, 'call_ask'), 'The user answered in their own words:\nHowdy partner', 'the option key is not part of the answer');
    assert.match(chat.screen(), /→ custom: Howdy partner/);

    chat.send('4');
    await chat.waitForScreen(/^why \(the model is told\): *$/m);
    chat.send('src is mine; clean build/ instead', 'Enter');
    await chat.waitForScreen(/Greeted and kept src\.\n+(?:─ .*\n+)?›/);
    assert.equal(toolOutputSent(fake.requests, 'call_rm'), `${DENIED_OUTPUT}\nThe user's reason: src is mine; clean build/ instead`);
    assert.equal(existsSync(join(server.workspace, 'src')), false);
  });

  it('keeps keys typed while an answer streams off the screen, shows them in the status line, and sends them as the next prompt', async () => {
    const chat = newChat('aside');
    await chat.start(server.url, server.workspace);
    fake.enqueue({ kind: 'hang', afterText: 'Still thinking about it' });
    chat.send('a long one', 'Enter');
    await chat.waitForScreen(/Still thinking about it/);
    await chat.waitForScreen(/answering · \d+s/);
    chat.send('and then this');
    const typing = await chat.waitForScreen(/next › and then this/);
    assert.match(typing, /Still thinking about it\n/, 'the typed keys are not in the answer');
    assert.doesNotMatch(typing.replace(/.*next › and then this.*/, ''), /and then this/, 'only the status line shows them');
    fake.enqueue({ kind: 'reply', text: 'Answer to the line typed aside.' });
    chat.send('Enter');
    await chat.waitForScreen(/1 queued/);
    chat.send('C-c');
    const after = await chat.waitForScreen(/Answer to the line typed aside\.\n+(?:─ .*\n+)?›/);
    assert.match(after, /\[cancelled\]\n› and then this\n/, 'the queued line is shown as sent, after the cancelled turn');
    assert.equal(fake.requests.filter((request) => JSON.stringify(request.body).includes('and then this')).length, 1);
  });

  it('shows a status line under a running turn: state, elapsed seconds, tokens streamed and the session\'s tokens, cost and context, a command\'s latest output', async () => {
    const chat = newChat('status');
    await chat.start(server.url, server.workspace);
    fake.enqueue({ kind: 'reply', text: 'Counted.', usage: { input: 1200, output: 34 } });
    chat.send('count', 'Enter');
    await chat.waitForScreen(/Counted\.\n+(?:─ .*\n+)?›/);
    // cancelled while the command runs: no second model request, so nothing more is queued
    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['sh', '-c', 'echo step-one-done; sleep 60'] }), callId: 'call_slow' }] });
    chat.send('run the slow thing', 'Enter');
    await chat.waitForScreen(/\[3\] deny/);
    chat.send('1');
    // the session's spent and context after the first turn: 1,234 tokens at $1 and $2 per million, 0.6% of 200k
    const running = await chat.waitForScreen(/running shell: step-one-done · \d+s · session 1\.2k tokens · \$0\.0013 · context 1% of 200k/);
    assert.match(running, /^⠋|^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running shell/m, 'a spinner leads the line');
    chat.send('C-c');
    const ended = await chat.waitForScreen(/\[cancelled\]\n+(?:─ .*\n+)?›/);
    assert.doesNotMatch(ended, /running shell: step-one-done · /, 'the status line is gone when the turn ends');
  });

  it('renders Markdown with coloured code, previews a tool\'s output without its header, and shows a patch as a coloured diff', async () => {
    const chat = newChat('markdown');
    await chat.start(server.url, server.workspace);
    writeFileSync(join(server.workspace, 'greeting.txt'), 'hello\nworld\n');
    const patch = '*** Begin Patch\n*** Update File: greeting.txt\n@@\n hello\n-world\n+agentd\n*** End Patch';
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['printf', 'one\\ntwo\\n'] }), callId: 'call_printf' }] },
      { kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_patch' }] },
      { kind: 'reply', text: '# Done\n\nI did:\n- ran `printf`\n- **patched** the file\n\n```js\nconst answer = 42;\n```\n`evil \u001b[2J\u001b]52;c;ZXZpbA==\u0007` done\nThat is all.' },
    );
    chat.send('do it', 'Enter');
    await chat.waitForScreen(/\[3\] deny/);
    chat.send('1');
    await chat.waitForScreen(/\*\*\* Update File: greeting\.txt[\s\S]*\[3\] deny/);
    const approval = chat.screen({ escapes: true });
    assert.match(approval, /\u001b\[[0-9;]*32m\+agentd/, 'the added line of the patch is green');
    assert.match(approval, /\u001b\[[0-9;]*31m-world/, 'the removed line is red');
    chat.send('1');
    const text = await chat.waitForScreen(/That is all\.\n+(?:─ .*\n+)?›/);
    assert.equal(readFileSync(join(server.workspace, 'greeting.txt'), 'utf8'), 'hello\nagentd\n');
    assert.match(text, /⎿ Exit code: 0 · Wall time: [\d.]+ s\n +│ one\n +│ two\n/, 'the output itself, under a one-line summary of the header');
    assert.doesNotMatch(text, /^ *│ Output:/m);
    assert.match(text, /^Done$/m, 'the heading without its #');
    assert.match(text, /^• ran printf$/m, 'a bullet, and inline code without backticks');
    assert.match(text, /^• patched the file$/m);
    assert.match(text, /^╭─ js\n│ const answer = 42;\n╰─$/m, 'the code block framed, without fences');
    assert.match(text, /^evil \^\[\[2J\^\[\]52;c;ZXZpbA==\^G done$/m, 'escape sequences from the model are shown, not obeyed, inside Markdown too');
    const coloured = chat.screen({ escapes: true });
    assert.match(coloured, /\u001b\[[0-9;]*m\u001b?\[?[0-9;]*m?const\u001b/, 'the code keyword is coloured');
    assert.match(coloured, /\u001b\[[0-9;]*33mprintf/, 'inline code is coloured');
  });

  it('/resume opens a picker (arrows, type to filter) and shows the recent turns; an id prefix resumes directly', async () => {
    const make = async (title: string, turns: string[]) => {
      const session = (await server.request('POST', '/v1/sessions', { body: { title } })).json;
      for (const [index, input] of turns.entries()) {
        fake.enqueue({ kind: 'reply', text: `${title} answer ${index + 1}` });
        const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input } })).json;
        await waitForTurn(server, turn.id);
      }
      return session;
    };
    const alpha = await make('alpha project', ['first alpha question', 'second alpha question', 'third alpha question']);
    const beta = await make('beta project', ['only beta question']);
    const chat = newChat('resume');
    await chat.start(server.url, server.workspace);
    chat.send('/resume', 'Enter');
    await chat.waitForScreen(/resume \(↑↓ move/);
    chat.send('proj');
    await chat.waitForScreen(/› +[0-9a-f-]{13} {2}beta project/);
    chat.send('Down');
    await chat.waitForScreen(/› +[0-9a-f-]{13} {2}alpha project/);
    chat.send('Enter');
    const resumed = await chat.waitForScreen(/alpha project answer 3\n+(?:─ .*\n+)?›/);
    assert.match(resumed, /resumed alpha project · .* · 3 turns/);
    assert.match(resumed, /› first alpha question\nalpha project answer 1\n› second alpha question\nalpha project answer 2\n› third alpha question\nalpha project answer 3/, 'every recent turn, not only the last answer');
    assert.doesNotMatch(resumed, /resume \(↑↓ move/, 'the picker is gone');

    fake.enqueue({ kind: 'reply', text: 'Continuing alpha.' });
    chat.send('go on', 'Enter');
    await chat.waitForScreen(/Continuing alpha\.\n+(?:─ .*\n+)?›/);
    assert.equal((await server.request('GET', `/v1/sessions/${alpha.id}/history`)).json.total, 4, 'the turn went to the picked session');

    chat.send(`/resume ${beta.id.slice(0, 13)}`, 'Enter');
    await chat.waitForScreen(/resumed beta project[\s\S]*› only beta question\nbeta project answer 1\n+(?:─ .*\n+)?›/);
    chat.send('/resume no-such-prefix', 'Enter');
    await chat.waitForScreen(/no session starts with no-such-prefix/);

    chat.send('/resume', 'Enter');
    await chat.waitForScreen(/resume \(↑↓ move/);
    chat.send('Escape');
    const left = await chat.waitForScreen(/no session starts with no-such-prefix\n› \/resume\n› *$/m);
    assert.doesNotMatch(left, /resume \(↑↓ move/, 'Esc leaves the picker, the prompt comes back');

    const started = newChat('resume-option');
    await started.start(server.url, server.workspace, { args: ['--session', alpha.id.slice(0, 13)] });
    await started.waitForScreen(/resumed alpha project[\s\S]*› go on\nContinuing alpha\.\n+(?:─ .*\n+)?›/);
  });

  it('with NO_COLOR: plain text, no escape sequence, no status line', async () => {
    const chat = newChat('nocolor');
    await chat.start(server.url, server.workspace, { env: { NO_COLOR: '1' } });
    fake.enqueue({ kind: 'hang', afterText: '# Plain\n\n- a `b`\npartial' });
    chat.send('plainly', 'Enter');
    await chat.waitForScreen(/^- a `b`$/m);
    const { data } = (await server.request('GET', '/v1/turns')).json;
    await waitForStatus(server, data[0].id, 'running');
    const screen = chat.screen({ escapes: true });
    assert.doesNotMatch(screen, SGR, `no colour or attribute:\n${JSON.stringify(screen)}`);
    assert.doesNotMatch(screen, /\d+s · |answering|⠋|⠙/, 'no status line');
    assert.match(screen, /^# Plain$/m, 'Markdown as written');
    chat.send('C-c');
    await chat.waitForScreen(/\[cancelled\]/);
  });

  it('works in the directory it was started in, or --cwd DIR, shown in the header; a directory outside the roots is refused with a clear message', async () => {
    const sub = join(server.workspace, 'sub');
    mkdirSync(sub, { recursive: true });
    const here = newChat('cwd-here');
    await here.start(server.url, sub);
    // with --url the directory is checked at start by making the session there
    assert.match(here.screen(), new RegExp(`session [0-9a-f-]{36} · \\S+ · cwd ${sub.replace(/[/.]/g, '\\$&')}\n`));
    fake.enqueue({ kind: 'reply', text: 'In sub.' });
    here.send('where am I', 'Enter');
    await here.waitForScreen(/In sub\.\n+(?:─ .*\n+)?›/);
    const sessions = (await server.request('GET', '/v1/sessions?limit=1')).json.data;
    assert.equal(sessions[0].cwd, sub, 'the session is where chat was started, not the server\'s root');

    const elsewhere = newChat('cwd-option');
    await elsewhere.start(server.url, server.workspace, { args: ['--cwd', 'sub'] });
    assert.match(elsewhere.screen(), /cwd \S+\/sub\n/);

    const outside = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-outside-')));
    try {
      // refused at start, before any prompt
      const remote = newChat('cwd-outside-url');
      remote.run(['--url', server.url], outside);
      const refused = await remote.waitForScreen(/CHAT-EXITED-\d+/, 90_000);
      assert.match(refused, /CHAT-EXITED-2/);
      assert.match(refused, new RegExp(`the server refuses ${outside.replace(/[/.]/g, '\\$&')} as the session's directory \\(workspace_not_allowed: `));
      assert.match(refused, /pass --cwd DIR/);

      const models = join(outside, 'models.json');
      writeFileSync(models, JSON.stringify(fakeProviderModels(fake.baseUrl)));
      const embedded = newChat('cwd-outside-embedded');
      embedded.run(['--models-file', models, '--state-dir', join(outside, 'state'), '--workspace-root', server.workspace], outside);
      const early = await embedded.waitForScreen(/CHAT-EXITED-\d+/, 90_000);
      assert.match(early, /CHAT-EXITED-2/);
      assert.match(early, new RegExp(`agentd chat: ${outside.replace(/[/.]/g, '\\$&')} is outside the server's workspace roots \\(${server.workspace.replace(/[/.]/g, '\\$&')}\\)`));
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('exits 0 with its input at an end before any prompt, leaving no session behind', async () => {
    const before = await sessionCount();
    for (const [name, shape] of [['devnull', { after: '< /dev/null' }], ['pipe', { before: 'true |' }]] as const) {
      const chat = newChat(name);
      chat.run(['--url', server.url], server.workspace, shape);
      const screen = await chat.waitForScreen(/CHAT-EXITED-\d+/, 90_000);
      assert.match(screen, /CHAT-EXITED-0/, screen);
      assert.doesNotMatch(screen, /fetch failed|ECONNRESET|server_stopping|Error/, screen);
    }
    assert.equal(await sessionCount(), before, 'no empty session');
  });

  it('exits 0 the same way with the server it starts itself, which used to stop under a request still in flight', async () => {
    const state = mkdtempSync(join(tmpdir(), 'agentd-chat-eof-'));
    try {
      const models = join(state, 'models.json');
      writeFileSync(models, JSON.stringify(fakeProviderModels(fake.baseUrl)));
      const serveArgs = ['--models-file', models, '--state-dir', state];
      for (const [name, shape] of [['embedded-devnull', { after: '< /dev/null' }], ['embedded-pipe', { before: 'true |' }]] as const) {
        const chat = newChat(name);
        chat.run(serveArgs, server.workspace, shape);
        const screen = await chat.waitForScreen(/CHAT-EXITED-\d+/, 90_000);
        assert.match(screen, /CHAT-EXITED-0/, screen);
        assert.doesNotMatch(screen, /fetch failed|ECONNRESET|server_stopping|Error/, screen);
      }
      const listing = newChat('embedded-sessions');
      listing.run(serveArgs, server.workspace, { before: "printf '/sessions\\n' |" });
      const sessions = await listing.waitForScreen(/CHAT-EXITED-\d+/, 90_000);
      assert.match(sessions, /^no sessions\n[\s\S]*CHAT-EXITED-0/m, 'the state directory holds no session');
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
