import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { startAgentd, type AgentdProcess } from '../readme/agentd-process.ts';
import { chatCommand } from './chat-support.ts';

// The server is the shipped one (bin/agentd.js runs dist/: build first), so SIGTERM is a real stop.
const SESSION = `agentd-chat-restart-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-J', '-t', SESSION, '-S', '-200');
const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;
const occurrences = (text: string, part: string) => text.split(part).length - 1;

async function waitForScreen(test: RegExp, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = screen();
    if (test.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`screen never matched ${test}:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('agentd chat across a server restart (tmux, agentd serve as a process)', () => {
  let fake: FakeProvider;
  let server: AgentdProcess | undefined;
  let stateDir: string;
  let workspace: string;
  let serveArgs: string[];
  before(async () => {
    fake = await startFakeProvider();
    stateDir = mkdtempSync(join(tmpdir(), 'agentd-chat-restart-state-'));
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-restart-ws-')));
    const modelsFile = join(stateDir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    serveArgs = ['--state-dir', stateDir, '--workspace-root', workspace, '--models-file', modelsFile, '--log-level', 'warn'];
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', SESSION);
    } catch {
      // already gone
    }
    await server?.stop();
    await fake.close();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  });

  it('keeps the chat through SIGTERM and restarts on the same port: the next turn is answered, the first turn is not shown again, a line typed while down is sent once it is back', async () => {
    server = await startAgentd(['--port', '0', ...serveArgs], {}, workspace);
    const { url } = server;
    const port = new URL(url).port;
    const command = chatCommand(['--url', url]).map(quote).join(' ');
    tmux('new-session', '-d', '-s', SESSION, '-x', '150', '-y', '50', '-c', workspace, `env -u SERVICE_TOKEN ${command}; echo CHAT-EXITED-$?; sleep 60`);
    await waitForScreen(/^›/m);

    fake.enqueue({ kind: 'hang', afterText: 'First half of an answer' });
    tmux('send-keys', '-t', SESSION, 'start something long', 'Enter');
    await waitForScreen(/First half of an answer/);

    await server.stop(); // SIGTERM: the running turn ends and every event stream is closed
    await waitForScreen(/connection lost; reconnecting…/);
    server = await startAgentd(['--port', port, ...serveArgs], {}, workspace);
    assert.equal(server.url, url, 'the same address again');
    await waitForScreen(/^reconnected\n[^›]*^› *$/m);

    fake.enqueue({ kind: 'reply', text: 'Answer from the second life.' });
    tmux('send-keys', '-t', SESSION, 'and now?', 'Enter');
    const text = await waitForScreen(/Answer from the second life\.\n+›/);
    assert.doesNotMatch(text, /CHAT-EXITED/, 'the user never restarted the chat');
    assert.equal(occurrences(text, 'First half of an answer'), 1, `the first turn is shown once:\n${text}`);
    assert.equal(occurrences(text, 'Answer from the second life.'), 1);
    assert.equal(occurrences(text, 'start something long'), 1, 'the first input is not sent again');
    const modelInputs = () => fake.requests.map((request) => JSON.stringify(request.body));
    assert.equal(modelInputs().filter((body) => body.includes('and now?')).length, 1, 'the second line became exactly one model request');

    // A line typed while the server is down waits for it instead of failing.
    await server.stop();
    await waitForScreen(/Answer from the second life\.[\s\S]*^connection lost; reconnecting…\n› *$/m);
    fake.enqueue({ kind: 'reply', text: 'Answer to a line typed while the server was down.' });
    tmux('send-keys', '-t', SESSION, 'typed while down', 'Enter');
    await new Promise((resolve) => setTimeout(resolve, 500));
    server = await startAgentd(['--port', port, ...serveArgs], {}, workspace);
    const after = await waitForScreen(/Answer to a line typed while the server was down\.\n+›/);
    assert.doesNotMatch(after, /CHAT-EXITED|fetch failed|server_stopping/);
    assert.equal(occurrences(after, 'Answer to a line typed while the server was down.'), 1);
    assert.equal(modelInputs().filter((body) => body.includes('typed while down')).length, 1, 'one turn for the line, however often it was sent');
  });
});
