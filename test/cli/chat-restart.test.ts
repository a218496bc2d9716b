import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { startAgentd, type AgentdProcess } from '../readme/agentd-process.ts';
import { tmuxChat } from './tmux-chat.ts';

// The server is the shipped one (bin/agentd.js runs dist/: build first), so SIGTERM is a real stop.
const chat = tmuxChat(`agentd-chat-restart-${process.pid}`, { joinWrappedLines: true });
const occurrences = (text: string, part: string) => text.split(part).length - 1;

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
    chat.kill();
    await server?.stop();
    await fake.close();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  });

  it('keeps the chat through SIGTERM and restarts on the same port: the next turn is answered, the first turn is not shown again, a line typed while down is sent once it is back', async () => {
    server = await startAgentd(['--port', '0', ...serveArgs], {}, workspace);
    const { url } = server;
    const port = new URL(url).port;
    await chat.start(url, workspace);

    fake.enqueue({ kind: 'hang', afterText: 'First half of an answer' });
    chat.send('start something long', 'Enter');
    await chat.waitForScreen(/First half of an answer/);

    await server.stop(); // SIGTERM: the running turn ends and every event stream is closed
    await chat.waitForScreen(/connection lost; reconnecting…/);
    server = await startAgentd(['--port', port, ...serveArgs], {}, workspace);
    assert.equal(server.url, url, 'the same address again');
    await chat.waitForScreen(/^reconnected\n[^›]*^› *$/m);

    fake.enqueue({ kind: 'reply', text: 'Answer from the second life.' });
    chat.send('and now?', 'Enter');
    const text = await chat.waitForScreen(/Answer from the second life\.\n+(?:─ .*\n+)?›/);
    assert.doesNotMatch(text, /CHAT-EXITED/, 'the user never restarted the chat');
    assert.equal(occurrences(text, 'First half of an answer'), 1, `the first turn is shown once:\n${text}`);
    assert.equal(occurrences(text, 'Answer from the second life.'), 1);
    assert.equal(occurrences(text, 'start something long'), 1, 'the first input is not sent again');
    const modelInputs = () => fake.requests.map((request) => JSON.stringify(request.body));
    assert.equal(modelInputs().filter((body) => body.includes('and now?')).length, 1, 'the second line became exactly one model request');

    // A line typed while the server is down waits for it instead of failing.
    await server.stop();
    await chat.waitForScreen(/Answer from the second life\.[\s\S]*^connection lost; reconnecting…\n› *$/m);
    fake.enqueue({ kind: 'reply', text: 'Answer to a line typed while the server was down.' });
    chat.send('typed while down', 'Enter');
    await new Promise((resolve) => setTimeout(resolve, 500));
    server = await startAgentd(['--port', port, ...serveArgs], {}, workspace);
    const after = await chat.waitForScreen(/Answer to a line typed while the server was down\.\n+(?:─ .*\n+)?›/);
    assert.doesNotMatch(after, /CHAT-EXITED|fetch failed|server_stopping/);
    assert.equal(occurrences(after, 'Answer to a line typed while the server was down.'), 1);
    assert.equal(modelInputs().filter((body) => body.includes('typed while down')).length, 1, 'one turn for the line, however often it was sent');
  });
});
