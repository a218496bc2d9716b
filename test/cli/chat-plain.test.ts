import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeProviderModels, startTestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { chatCommand } from './chat-support.ts';

/** Starts the chat with piped stdin and stdout (no terminal); `exited` resolves with its exit code (SIGKILL after two minutes). */
function startPiped(args: string[], cwd: string) {
  const [command, ...rest] = chatCommand(args);
  const child = spawn(command, rest, { cwd, env: { PATH: process.env.PATH, HOME: cwd }, stdio: ['pipe', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve(code))));
  return { stdin: child.stdin, output, exited };
}

/** Runs the chat with piped stdin and stdout, feeding it lines; resolves at exit. */
async function runPiped(args: string[], cwd: string, lines: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const chat = startPiped(args, cwd);
  chat.stdin.end(lines.map((line) => `${line}\n`).join(''));
  const code = await chat.exited;
  return { code, ...chat.output };
}

describe('agentd chat without a terminal, on an embedded server', () => {
  let fake: FakeProvider;
  let workspace: string;
  let modelsFile: string;
  let stateDir: string;
  before(async () => {
    fake = await startFakeProvider();
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-ws-')));
    stateDir = mkdtempSync(join(tmpdir(), 'agentd-chat-state-'));
    modelsFile = join(stateDir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
  });
  after(async () => {
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('answers each piped line as a turn in plain lines, and shows escape sequences from the model inert', async () => {
    fake.enqueue(
      { kind: 'reply', reasoning: 'thinking it over', text: 'first line\nsecond line' },
      { kind: 'reply', text: 'evil \u001b[2J\u001b]52;c;ZXZpbA==\u0007 done' },
    );
    const { code, stdout, stderr } = await runPiped(['--models-file', modelsFile, '--state-dir', stateDir], workspace, ['hello', 'again']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(`embedded server on http://127\\.0\\.0\\.1:\\d+ for ${workspace.replace(/[/.]/g, '\\$&')}`));
    assert.match(stdout, /^reasoning: thinking it over$/m);
    assert.match(stdout, /^first line\nsecond line$/m);
    assert.match(stdout, /^evil \^\[\[2J\^\[\]52;c;ZXZpbA==\^G done$/m);
    assert.ok(!stdout.includes('\u001b'), 'no escape sequence reaches a pipe, from us or the model');
    assert.equal(fake.requests.length, 2, 'one model request per line');
  });

  it('/model ID moves the conversation to another model: the next turn sends the history in its dialect', async () => {
    const before = fake.requests.length;
    fake.enqueue({ kind: 'reply', text: 'answered by responses' }, { kind: 'reply', text: 'answered by anthropic' });
    const { code, stdout, stderr } = await runPiped(['--models-file', modelsFile, '--state-dir', stateDir], workspace, ['first question', '/model fake-anthropic', 'second question']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /the session now talks to fake-anthropic \(anthropic-messages\); its history goes along/);
    assert.match(stdout, /answered by anthropic/);
    const [first, second] = fake.requests.slice(before);
    assert.equal(first.dialect, 'openai-responses');
    assert.equal(second.dialect, 'anthropic-messages');
    const sent = JSON.stringify(second.body.messages);
    for (const text of ['first question', 'answered by responses', 'second question']) assert.ok(sent.includes(text), text);
  });

  it('/steer typed while a turn runs reaches that turn: the model gets the words in its next request', async () => {
    const before = fake.requests.length;
    fake.enqueue({ kind: 'slow-first-byte', delayMs: 5000, text: 'first answer' }, { kind: 'reply', text: 'answer with the steer' });
    const chat = startPiped(['--models-file', modelsFile, '--state-dir', stateDir], workspace);
    chat.stdin.write('a long question\n');
    await fake.waitForRequests(before + 1, 60_000);
    chat.stdin.end('/steer mind the edge cases\n');
    const code = await chat.exited;
    const { stdout, stderr } = chat.output;
    assert.equal(code, 0, stderr);
    assert.match(stdout, /↳ steered into the running turn: mind the edge cases/);
    assert.match(stdout, /answer with the steer/);
    const requests = fake.requests.slice(before);
    assert.equal(requests.length, 2, 'one turn: its request in flight, then one more for the steer');
    assert.ok(!JSON.stringify(requests[0].body).includes('mind the edge cases'));
    assert.equal(JSON.stringify(requests[1].body).split('mind the edge cases').length - 1, 1);
  });

  it('a budget request: raise asks for the new limit; a refused one is asked again', async () => {
    const server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), confinement: 'off' });
    try {
      const session = (await server.request('POST', '/v1/sessions', { body: { budget: { tokens: 0 } } })).json;
      const before = fake.requests.length;
      fake.enqueue({ kind: 'reply', text: 'within the raised budget' });
      // piped: a line answers the request shown; `0` is not above spent, `500` is
      const chat = startPiped(['--url', server.url, '--session', session.id], workspace);
      const shown = async (pattern: RegExp) => {
        const deadline = Date.now() + 60_000;
        while (!pattern.test(chat.output.stdout + chat.output.stderr) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        assert.match(chat.output.stdout + chat.output.stderr, pattern);
      };
      chat.stdin.write('spend\n');
      await shown(/The session has spent 0 tokens of its budget of 0/);
      chat.stdin.write('raise\n0\n');
      await shown(/invalid_decision: the new tokens limit must be above what the session has spent \(0\)/);
      chat.stdin.end('raise\n500\n');
      const code = await chat.exited;
      assert.equal(code, 0, chat.output.stderr);
      assert.match(chat.output.stdout, /→ raise: 500/);
      assert.match(chat.output.stdout, /within the raised budget/);
      assert.equal(fake.requests.length, before + 1);
      assert.deepEqual((await server.request('GET', `/v1/sessions/${session.id}`)).json.budget, { tokens: 500, costUsd: null });
    } finally {
      await server.close();
    }
  });

  it('refuses server options together with --url, with exit code 2', async () => {
    const { code, stderr } = await runPiped(['--url', 'http://127.0.0.1:9', '--models-file', modelsFile], workspace, []);
    assert.equal(code, 2);
    assert.match(stderr, /--models-file: server options only apply without --url/);
  });
});
