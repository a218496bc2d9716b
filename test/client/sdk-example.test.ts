/**
 * examples/sdk-turn.mjs against a real server, as a real child process: it answers an approval
 * from standard input (typed after the question, or piped before it), asks again after an answer
 * that is not an option, and never leaves a turn waiting: the end of its input when an answer is
 * needed cancels the turn, and so does Ctrl-C (a signal, or the key in a real terminal).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useFakeServer } from '../support/harness.ts';
import { waitForStatus } from '../support/server.ts';

// The example imports `agentd/client`, the package's own export of dist/: run `npm run build` first.
const EXAMPLE = fileURLToPath(new URL('../../examples/sdk-turn.mjs', import.meta.url));
const APPROVAL_QUESTION = /1\) allow_once {2}2\) allow_session {2}3\) deny\? $/;
const touch = (file: string) => ({ kind: 'reply' as const, text: 'Making the file now.', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', file] }), callId: `call_${file}` }], chunkDelayMs: 5 });

interface Example {
  child: ChildProcessWithoutNullStreams;
  /** resolves when stdout matches */
  printed(pattern: RegExp): Promise<void>;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

describe('examples/sdk-turn.mjs against a real server', () => {
  const harness = useFakeServer();

  function runExample(prompt: string): Example {
    const child = spawn(process.execPath, [EXAMPLE, prompt], {
      cwd: harness.server.workspace,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENTD_URL: harness.server.url },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const watchers: Array<() => void> = [];
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      for (const watcher of [...watchers]) watcher();
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      }),
    );
    const printed = (pattern: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(stdout)) return;
          watchers.splice(watchers.indexOf(check), 1);
          resolve();
        };
        watchers.push(check);
        check();
        void exit.then(() => reject(new Error(`exited before printing ${pattern}:\n${stdout}\n${stderr}`)));
      });
    return { child, printed, exit };
  }

  async function latestTurn() {
    const { data } = (await harness.server.request('GET', '/v1/turns')).json;
    return data[0];
  }

  async function assertNothingWaiting(status: string) {
    const turn = await latestTurn();
    assert.equal((await waitForStatus(harness.server, turn.id, status)).status, status);
    assert.deepEqual((await harness.server.request('GET', '/v1/requests')).json.data, [], 'no request is left waiting');
  }

  it('prints the streamed answer, asks the approval on stdin, and the answer it is given resolves it', async () => {
    harness.fake.enqueue(touch('example.txt'), { kind: 'reply', text: 'The file is there.', chunkDelayMs: 5 });
    const example = runExample('make a file');
    await example.printed(APPROVAL_QUESTION);
    assert.equal(existsSync(join(harness.server.workspace, 'example.txt')), false, 'nothing ran before the answer');
    example.child.stdin.write('allow_once\n');
    const { code, stdout, stderr } = await example.exit;
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /Making the file now\./);
    assert.match(stdout, /touch example\.txt/, 'the approval prompt names the command');
    assert.match(stdout, /The file is there\.\n\[completed\]\n$/);
    assert.equal(existsSync(join(harness.server.workspace, 'example.txt')), true, 'the approval the script sent let the command run');
    await assertNothingWaiting('completed');
  });

  it('asks again after an answer that is not an option, instead of failing on the 422', async () => {
    harness.fake.enqueue(touch('second.txt'), { kind: 'reply', text: 'Done.', chunkDelayMs: 5 });
    const example = runExample('make another file');
    await example.printed(APPROVAL_QUESTION);
    example.child.stdin.write('yes\n');
    await example.printed(/"yes" is not one of the options[^]*allow_once {2}2\) allow_session {2}3\) deny\? $/);
    assert.equal(existsSync(join(harness.server.workspace, 'second.txt')), false);
    example.child.stdin.write('1\n');
    const { code, stdout, stderr } = await example.exit;
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /Done\.\n\[completed\]\n$/);
    assert.equal(existsSync(join(harness.server.workspace, 'second.txt')), true, 'option 1, allow_once, let it run');
    await assertNothingWaiting('completed');
  });

  it('takes an answer piped in before the question was asked', async () => {
    harness.fake.enqueue(touch('piped.txt'), { kind: 'reply', text: 'Piped.', chunkDelayMs: 5 });
    const example = runExample('make a piped file');
    example.child.stdin.end('allow_once\n');
    const { code, stdout, stderr } = await example.exit;
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /Piped\.\n\[completed\]\n$/);
    assert.equal(existsSync(join(harness.server.workspace, 'piped.txt')), true);
    await assertNothingWaiting('completed');
  });

  it('cancels the turn when its input ends before an answer it needs (piped, empty)', async () => {
    harness.fake.enqueue(touch('never.txt'));
    const example = runExample('make a file nobody approves');
    example.child.stdin.end();
    const { code, stdout, stderr } = await example.exit;
    assert.equal(code, 1, `${stdout}\n${stderr}`);
    assert.match(stdout, /\[input ended before an answer: cancelling the turn\][^]*\[cancelled\]\n$/);
    assert.equal(stderr, '');
    assert.equal(existsSync(join(harness.server.workspace, 'never.txt')), false);
    await assertNothingWaiting('cancelled');
  });

  it('cancels the turn on Ctrl-C (SIGINT) while it waits for an answer, and while the model runs', async () => {
    harness.fake.enqueue(touch('interrupted.txt'));
    const waiting = runExample('make a file, then be interrupted');
    await waiting.printed(APPROVAL_QUESTION);
    waiting.child.kill('SIGINT');
    const asked = await waiting.exit;
    assert.equal(asked.code, 130, `${asked.stdout}\n${asked.stderr}`);
    assert.match(asked.stdout, /\[Ctrl-C: cancelling the turn\][^]*\[cancelled\]\n$/);
    await assertNothingWaiting('cancelled');

    harness.fake.enqueue({ kind: 'hang' });
    const running = runExample('think forever');
    const turn = await (async () => {
      for (;;) {
        const latest = await latestTurn();
        if (latest?.status === 'running' && latest.userText === 'think forever') return latest;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    running.child.kill('SIGINT');
    const streamed = await running.exit;
    assert.equal(streamed.code, 130, `${streamed.stdout}\n${streamed.stderr}`);
    assert.equal((await waitForStatus(harness.server, turn.id, 'cancelled')).status, 'cancelled');
  });

  it('cancels the turn on the Ctrl-C key in a real terminal (tmux), where readline reads the key itself', async (t) => {
    harness.fake.enqueue(touch('terminal.txt'));
    const socket = `agentd-sdk-example-${process.pid}`;
    const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    t.after(() => tmux('kill-server'));
    const scratch = mkdtempSync(join(tmpdir(), 'agentd-sdk-tty-'));
    const statusFile = join(scratch, 'status');
    const script = join(scratch, 'run.sh');
    writeFileSync(script, `cd ${JSON.stringify(harness.server.workspace)}\n${JSON.stringify(process.execPath)} ${JSON.stringify(EXAMPLE)} 'make a file in a terminal'\necho "exit $?" > ${JSON.stringify(statusFile)}\nsleep 60\n`);
    const started = tmux('new-session', '-d', '-x', '200', '-y', '50', '-e', `AGENTD_URL=${harness.server.url}`, 'bash', script);
    assert.equal(started.status, 0, started.stderr);
    const screen = () => tmux('capture-pane', '-p', '-J').stdout;
    const until = async (pattern: RegExp) => {
      const deadline = Date.now() + 20_000;
      while (!pattern.test(screen())) {
        if (Date.now() > deadline) throw new Error(`the terminal never showed ${pattern}:\n${screen()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await until(/allow_once {2}2\) allow_session {2}3\) deny\?/);
    tmux('send-keys', 'C-c');
    await until(/\[cancelled\]/);
    assert.match(screen(), /\[Ctrl-C: cancelling the turn\]/);
    const deadline = Date.now() + 5_000;
    while (!existsSync(statusFile) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(existsSync(statusFile), 'the example exited');
    assert.equal(readFileSync(statusFile, 'utf8'), 'exit 130\n', 'the example exited as interrupted');
    await assertNothingWaiting('cancelled');
  });
});
