/**
 * The README works as written: a newcomer who pastes it into a terminal gets the command on PATH,
 * a server whose workspace is not the checkout, and answers.
 *
 * Convention: a fenced ```sh block right after an HTML comment marker is run by this test, as
 * bash with `set -euo pipefail` (an unset variable or a failing command stops it):
 * - `<!-- readme-install -->`: in the checkout, every line but `npm ci` (the suite runs in a
 *   checkout that `npm ci` has just installed and built). HOME is a scratch directory, so `~` and
 *   the `~/.local/bin` the README links into are the test's; that directory comes first on PATH,
 *   as on a machine whose login shell puts it there. The test owns its world: a bogus `agentd`
 *   right behind it on PATH stands for one a README followed earlier put there, and must not be
 *   the one that runs.
 * - `<!-- readme-start -->` and `<!-- readme-sandbox -->`: in the checkout, as the README says;
 *   `--port 0` is appended to `agentd serve` (tests never take a fixed port). The model is the
 *   default models file (`<state dir>/models.json` under that HOME) on the fake provider.
 * - `<!-- readme-walk -->`: in order, as one script, from another directory; every
 *   `http://127.0.0.1:4096` becomes the address of the server the start block started.
 * Unmarked blocks (the SSE stream that never ends, the models file) are not run.
 *
 * The walk's model is the fake provider, scripted for its turns: an answer, a shell command that
 * needs approval then an answer, and a long task that the walk cancels.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { http } from '../support/http.ts';
import { readMarkdown } from '../docs/markdown.ts';
import { logLines, startAgentdFromShell, type AgentdProcess } from './agentd-process.ts';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const README = join(REPOSITORY, 'README.md');
const README_ADDRESS = 'http://127.0.0.1:4096';

const FIRST_ANSWER = 'This directory holds nothing yet.';
const APPROVED_COMMAND = 'echo hello > notes.txt';
const SECOND_ANSWER = 'Done: notes.txt now contains hello.';

/** The sh blocks marked `<!-- name -->`, in order. */
function readmeBlocks(name: string): string[] {
  const marker = `<!-- ${name} -->`;
  const blocks = readMarkdown(README).fences.filter((fence) => fence.marker === marker);
  assert.ok(blocks.length > 0, `README.md has no block marked ${marker}`);
  for (const block of blocks) assert.equal(block.info, 'sh', `the block at README.md:${block.line} is not a sh block`);
  return blocks.map((block) => block.content);
}

/** A start block as the test runs it: `--port 0` appended to each `agentd serve` line. */
function onAnyPort(block: string): string {
  const lines = block.split('\n');
  assert.ok(lines.some((line) => /^(\S+=\S+ )*agentd serve /.test(line)), `the block starts agentd serve:\n${block}`);
  return lines.map((line) => (/^(\S+=\S+ )*agentd serve /.test(line) ? `${line.replace(/\s+#.*$/, '')} --port 0` : line)).join('\n');
}

/** bash, without blocking this process: the fake provider answers the walk's turns from here. */
async function runBash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
  const [status, signal] = (await once(child, 'close')) as [number | null, string | null];
  clearTimeout(timer);
  return { status, signal, stdout, stderr };
}

describe('the README, as a newcomer runs it', () => {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-readme-home-')));
  const linkBin = join(home, '.local', 'bin');
  // an agentd already on PATH (a README followed before, into another prefix): never the one run
  const elsewhere = join(home, 'elsewhere', 'bin');
  mkdirSync(elsewhere, { recursive: true });
  writeFileSync(join(elsewhere, 'agentd'), '#!/bin/sh\necho "a bogus agentd ran" >&2\nexit 99\n', { mode: 0o755 });
  // the machine: ~/.local/bin, the bogus agentd, this node (agentd runs on it), then the rest of PATH
  const env: NodeJS.ProcessEnv = {
    HOME: home,
    PATH: [linkBin, elsewhere, dirname(process.execPath), process.env.PATH].join(delimiter),
  };
  const workspace = join(home, 'agentd-work');
  let fake: FakeProvider;
  let agentd: AgentdProcess | undefined;

  before(async () => {
    fake = await startFakeProvider();
    // the default models file: <state dir>/models.json, the state dir being ~/.local/state/agentd
    const stateDir = join(home, '.local', 'state', 'agentd');
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(join(stateDir, 'models.json'), JSON.stringify(fakeProviderModels(fake.baseUrl)));
  });
  after(async () => {
    await agentd?.stop();
    await fake.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('install: npm link puts agentd in ~/.local/bin, running this checkout, ahead of any other agentd', () => {
    const [install] = readmeBlocks('readme-install');
    const lines = install.split('\n');
    assert.match(lines[0], /^npm ci\b/, 'the install starts with npm ci');
    const script = `set -euo pipefail\n${lines.slice(1).join('\n')}\ncommand -v agentd\nagentd --version`;
    const run = spawnSync('bash', ['-c', script], { cwd: REPOSITORY, env, encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const version = JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8')).version;
    assert.ok(run.stdout.endsWith(`${join(linkBin, 'agentd')}\n${version}\n`), run.stdout);
    assert.equal(realpathSync(join(linkBin, 'agentd')), realpathSync(join(REPOSITORY, 'bin', 'agentd.js')));
    assert.ok(existsSync(join(linkBin, 'agentd-sandbox')));
  });

  it('the PATH fallback the README gives, export PATH="$PWD/bin:$PATH", gives agentd in this checkout', () => {
    const fallback = 'export PATH="$PWD/bin:$PATH"';
    assert.ok(readFileSync(README, 'utf8').includes(fallback), 'the README gives the fallback');
    const run = spawnSync('bash', ['-c', `set -euo pipefail\n${fallback}\ncommand -v agentd\nagentd --version`], {
      cwd: REPOSITORY,
      env: { HOME: home, PATH: [elsewhere, dirname(process.execPath), process.env.PATH].join(delimiter) },
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.equal(run.stdout.split('\n')[0], join(REPOSITORY, 'bin', 'agentd'));
  });

  it('start and walk: a server whose workspace is not the checkout; both answers, a real request resolved, a third turn cancelled', async () => {
    const [start] = readmeBlocks('readme-start');
    agentd = await startAgentdFromShell(`set -euo pipefail\n${onAnyPort(start)}`, env, REPOSITORY);
    fake.enqueue(
      { kind: 'reply', text: FIRST_ANSWER },
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: APPROVED_COMMAND }), callId: 'call_notes' }] },
      { kind: 'reply', text: SECOND_ANSWER },
      { kind: 'hang' },
    );

    const walk = readmeBlocks('readme-walk').join('\n');
    assert.ok(walk.includes(README_ADDRESS), 'the walk names the default address');
    const script = 'set -euo pipefail\n' + walk.replaceAll(README_ADDRESS, agentd.url);
    const run = await runBash(script, mkdtempSync(join(tmpdir(), 'agentd-readme-shell-')), env);
    const output = run.stdout;
    assert.equal(run.status, 0, `the walk failed (${run.signal ?? run.status}):\n${output}\n${run.stderr}`);
    assert.equal(run.stderr, '');
    const lines = output.split('\n');

    assert.ok(lines.includes('{"ok":true}'), output);
    assert.ok(lines.some((line) => line.startsWith('{"ready":true,"instance":"')), output);
    assert.ok(lines.includes('fake-responses'), 'the models are listed');
    assert.ok(output.includes(`"cwd":${JSON.stringify(workspace)}`), `a session without cwd works in the directory the README made:\n${output}`);
    assert.ok(lines.includes(FIRST_ANSWER), `the first turn's answer is shown:\n${output}`);

    // the approval: prompt shown, request resolved, command run once, then the answer
    assert.ok(lines.includes('tool_approval'), output);
    assert.ok(output.includes(APPROVED_COMMAND), 'the prompt shows the command');
    assert.ok(lines.includes('allow_once allow_session deny'), output);
    assert.equal(readFileSync(join(workspace, 'notes.txt'), 'utf8'), 'hello\n', 'the approved command ran in the workspace');
    assert.equal(existsSync(join(REPOSITORY, 'notes.txt')), false, 'and not in the checkout the server was started in');
    assert.ok(lines.includes(SECOND_ANSWER), `the second turn's answer is shown:\n${output}`);
    assert.deepEqual((await http('GET', `${agentd.url}/v1/requests`)).json.data, [], 'no request is left pending');

    // the rest: history, rename, fork, cancel of a running turn, deletes
    assert.ok(lines.some((line) => line.startsWith('1: Create notes.txt') && line.endsWith(`-> ${SECOND_ANSWER}`)), output);
    assert.ok(lines.includes('Notes'), 'the rename is shown');
    assert.equal(lines.filter((line) => line === 'cancelled').length, 1, output);
    assert.equal(lines.filter((line) => line === '204').length, 2, output);

    // waiting for a turn is one held request, not a poll: no refused result is logged, at any level
    assert.match(walk, /result\?wait=60/);
    const refusedResults = logLines(agentd.stdout()).filter((line) => line.msg === 'request' && line.route === '/v1/turns/:id/result' && line.status === 409);
    assert.deepEqual(refusedResults, [], 'the README\'s wait for a turn writes no info line per poll');

    // nothing in the walk failed quietly: no error envelope, no null id carried forward
    assert.ok(!output.includes('"error"'), output);
    assert.ok(!lines.includes('null'), output);
    await agentd.stop();
    agentd = undefined;
  });

  it('the sandbox line: starts with bin/agentd-sandbox from the checkout, and a tool runs in the sandbox unasked', async () => {
    const [sandbox] = readmeBlocks('readme-sandbox');
    assert.match(sandbox, /--sandbox-runner bin\/agentd-sandbox/);
    mkdirSync(workspace, { recursive: true });
    agentd = await startAgentdFromShell(`set -euo pipefail\n${onAnyPort(sandbox)}`, env, REPOSITORY);
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo "$HOME $(pwd)" > sandboxed.txt' }), callId: 'call_sandboxed' }] },
      { kind: 'reply', text: 'Written from the sandbox.' },
    );
    const session = await http('POST', `${agentd.url}/v1/sessions`, { body: {} });
    assert.equal(session.status, 201, JSON.stringify(session.json));
    const turn = await http('POST', `${agentd.url}/v1/sessions/${session.json.id}/turns`, { body: { input: 'write a file' } });
    let result;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
      result = await http('GET', `${agentd.url}/v1/turns/${turn.json.id}/result`);
      if (result.status === 200) break;
    }
    assert.equal(result?.status, 200, 'the turn ended without asking anyone');
    assert.equal(result.json.turn.status, 'completed', JSON.stringify(result.json));
    // the sandbox's own view: the workspace at /workspace, a HOME of its own
    assert.equal(readFileSync(join(workspace, 'sandboxed.txt'), 'utf8').trim().split(' ')[1], '/workspace');
    await agentd.stop();
    agentd = undefined;
  });
});
