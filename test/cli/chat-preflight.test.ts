/**
 * `agentd chat` checks what it needs before the first prompt, and every refusal says what to do
 * next, with exit status 2: a dead --url, a missing or wrong token, an empty catalog, an unknown
 * model, a directory the server refuses, a state dir another agentd holds.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../support/server.ts';
import { chatCommand } from './chat-support.ts';

/** The chat, piped, with `input` as its whole stdin; resolves at exit. */
function runChat(args: string[], cwd: string, env: Record<string, string> = {}, input = 'hello\n'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [command, ...rest] = chatCommand(args);
  const child = spawn(command, rest, { cwd, env: { PATH: process.env.PATH, HOME: cwd, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.end(input);
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr }))));
}

/** A loopback port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('agentd chat checks the server, token, models and directory before the first prompt', () => {
  let scratch: string;
  let tokenServer: TestServer;
  let openServer: TestServer;
  const TOKEN = 'chat-preflight-token-0123456789abcdef';
  before(async () => {
    scratch = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-preflight-')));
    tokenServer = await startTestServer({ env: { SERVICE_TOKEN: TOKEN } });
    openServer = await startTestServer();
  });
  after(async () => {
    await tokenServer.close();
    await openServer.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('a dead --url: names the address and how to start or find the server, exit 2, nothing sent', async () => {
    const url = `http://127.0.0.1:${await deadPort()}`;
    const { code, stdout, stderr } = await runChat(['--url', url], scratch);
    assert.equal(code, 2, stderr);
    assert.equal(stderr, `agentd chat: cannot reach agentd at ${url} (ECONNREFUSED): start it with \`agentd serve\`, or pass the address it printed ("agentd listening on …") with --url\n`);
    assert.ok(!stdout.includes('›'), 'refused before any prompt');
  });

  it('no token, then a wrong one: says which, naming SERVICE_TOKEN and --token-file', async () => {
    const missing = await runChat(['--url', tokenServer.url], tokenServer.workspace);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /needs a token \(401 unauthorized\): set SERVICE_TOKEN or pass --token-file FILE/);
    const wrong = await runChat(['--url', tokenServer.url], tokenServer.workspace, { SERVICE_TOKEN: 'not-the-token-but-long-enough-0123456789abcdef' });
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /refuses the token \(401 unauthorized\): give the token it was started with \(SERVICE_TOKEN or --token-file FILE\)/);
  });

  it('an unknown --model: lists the catalog, exit 2', async () => {
    const { code, stderr } = await runChat(['--url', openServer.url, '--model', 'no-such-model'], openServer.workspace);
    assert.equal(code, 2);
    assert.match(stderr, /--model no-such-model is not in the catalog of http:\/\/127\.0\.0\.1:\d+; it has test-model, plain-model/);
  });

  it('a directory outside the --url server\'s roots: refused at start, and the check leaves no session behind', async () => {
    const { code, stderr } = await runChat(['--url', openServer.url], scratch);
    assert.equal(code, 2);
    assert.match(stderr, new RegExp(`the server refuses ${scratch} as the session's directory \\(workspace_not_allowed: .*\\); start chat in a directory under the server's workspace roots, or pass --cwd DIR`));
    assert.deepEqual((await openServer.request('GET', '/v1/sessions')).json.data, []);
  });

  it('a chat that ends before its first prompt leaves no session behind (the start-up check\'s is deleted)', async () => {
    const { code, stdout, stderr } = await runChat(['--url', openServer.url], openServer.workspace, {}, '');
    assert.equal(code, 0, stderr);
    assert.match(stdout, /session [0-9a-f-]{36} · test-model/);
    assert.deepEqual((await openServer.request('GET', '/v1/sessions')).json.data, []);
  });

  it('an empty catalog on the server started here: names --models-file, exit 2', async () => {
    const state = mkdtempSync(join(scratch, 'state-'));
    const { code, stderr } = await runChat(['--state-dir', state], scratch);
    assert.equal(code, 2);
    assert.match(stderr, /the server started here has no models \(model_catalog_empty\): start chat with --models-file FILE or an API key/);
  });

  it('a state dir another agentd holds: suggests --url and --state-dir', async () => {
    const { code, stderr } = await runChat(['--state-dir', openServer.backend.stateDir], openServer.workspace);
    assert.equal(code, 2);
    assert.match(stderr, new RegExp(`the state dir ${openServer.backend.stateDir} is in use by another agentd .*--url http://127\\.0\\.0\\.1:4096 .*--state-dir DIR`));
  });
});
