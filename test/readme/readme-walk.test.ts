/**
 * The README's walk works as written: a newcomer who pastes it into a terminal sees answers.
 *
 * Convention: a fenced ```sh block in README.md right after the HTML comment `<!-- readme-walk -->`
 * is part of the walk. The marked blocks run in order, as one bash script (with `set -euo
 * pipefail`, so an unset variable or a failing command stops it), against a real `agentd serve`
 * started from bin/agentd.js the way the README starts it: in the directory to work on, with a
 * models file. The one change made to the text is the server's address: every
 * `http://127.0.0.1:4096` becomes the address of the server this test started on a free port.
 * Unmarked blocks (the SSE stream that never ends, the models file) are not run.
 *
 * The model is the fake provider, scripted for the walk's turns: an answer, a shell command that
 * needs approval then an answer, and a long task that the walk cancels.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { http } from '../support/http.ts';
import { readMarkdown } from '../docs/markdown.ts';
import { startAgentd } from './agentd-process.ts';

const README = new URL('../../README.md', import.meta.url).pathname;
const WALK_MARKER = '<!-- readme-walk -->';
const README_ADDRESS = 'http://127.0.0.1:4096';

const FIRST_ANSWER = 'This directory holds a single file, README.txt, which says hi.';
const APPROVED_COMMAND = 'echo hello > notes.txt';
const SECOND_ANSWER = 'Done: notes.txt now contains hello.';

function readmeWalk(): string {
  const blocks = readMarkdown(README).fences.filter((fence) => fence.marker === WALK_MARKER);
  assert.ok(blocks.length > 0, `README.md has no block marked ${WALK_MARKER}`);
  for (const block of blocks) assert.equal(block.info, 'sh', `the walk block at README.md:${block.line} is not a sh block`);
  return blocks.map((block) => block.content).join('\n');
}

/** bash, without blocking this process: the fake provider answers the walk's turns from here. */
async function runBash(script: string, cwd: string): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-c', script], { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
  const [status, signal] = (await once(child, 'close')) as [number | null, string | null];
  clearTimeout(timer);
  return { status, signal, stdout, stderr };
}

describe('the README walk', () => {
  it('runs top to bottom against a real server: shows both answers, resolves a real request, cancels a third turn', async () => {
    const walk = readmeWalk();
    assert.ok(walk.includes(README_ADDRESS), 'the walk names the default address');

    const fake = await startFakeProvider();
    fake.enqueue(
      { kind: 'reply', text: FIRST_ANSWER },
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: APPROVED_COMMAND }), callId: 'call_notes' }] },
      { kind: 'reply', text: SECOND_ANSWER },
      { kind: 'hang' },
    );
    const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-readme-ws-')));
    writeFileSync(join(workspace, 'README.txt'), 'hi\n');
    const stateDir = mkdtempSync(join(tmpdir(), 'agentd-readme-state-'));
    const modelsFile = join(stateDir, 'my-models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    // as the README says: started in the directory to work on, with a models file
    const agentd = await startAgentd(['--port', '0', '--state-dir', stateDir, '--models-file', modelsFile], {}, workspace);
    try {
      const script = 'set -euo pipefail\n' + walk.replaceAll(README_ADDRESS, agentd.url);
      const run = await runBash(script, mkdtempSync(join(tmpdir(), 'agentd-readme-shell-')));
      const output = run.stdout;
      assert.equal(run.status, 0, `the walk failed (${run.signal ?? run.status}):\n${output}\n${run.stderr}`);
      assert.equal(run.stderr, '');
      const lines = output.split('\n');

      assert.ok(lines.includes('{"ok":true}'), output);
      assert.ok(lines.includes('fake-responses'), 'the models are listed');
      assert.ok(output.includes(`"cwd":${JSON.stringify(workspace)}`), 'a session without cwd works where the server was started');
      assert.ok(lines.includes(FIRST_ANSWER), `the first turn's answer is shown:\n${output}`);

      // the approval: prompt shown, request resolved, command run once, then the answer
      assert.ok(lines.includes('tool_approval'), output);
      assert.ok(output.includes(APPROVED_COMMAND), 'the prompt shows the command');
      assert.ok(lines.includes('allow_once allow_session deny'), output);
      assert.equal(readFileSync(join(workspace, 'notes.txt'), 'utf8'), 'hello\n', 'the approved command ran in the workspace');
      assert.ok(lines.includes(SECOND_ANSWER), `the second turn's answer is shown:\n${output}`);
      assert.deepEqual((await http('GET', `${agentd.url}/v1/requests`)).json.data, [], 'no request is left pending');

      // the rest: history, rename, fork, cancel of a running turn, deletes
      assert.ok(lines.some((line) => line.startsWith('1: Create notes.txt') && line.endsWith(`-> ${SECOND_ANSWER}`)), output);
      assert.ok(lines.includes('Notes'), 'the rename is shown');
      assert.equal(lines.filter((line) => line === 'cancelled').length, 1, output);
      assert.equal(lines.filter((line) => line === '204').length, 2, output);

      // nothing in the walk failed quietly: no error envelope, no null id carried forward
      assert.ok(!output.includes('"error"'), output);
      assert.ok(!lines.includes('null'), output);
    } finally {
      await agentd.stop();
      await fake.close();
    }
  });
});
