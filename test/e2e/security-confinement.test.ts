/**
 * Issue 9 by attack, through the real server: a prompt-injected model uses the shell to reach the
 * server's secrets and its host. Commands the classifier lets run unasked and commands a human
 * approved (the human being fooled too: symlinks out of the workspace, absolute /proc paths) both
 * run under bubblewrap; the secrets must appear nowhere the model, the history or the events
 * could carry them.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFakeServer } from '../support/harness.ts';
import { fakeProviderModels, waitForTurn } from '../support/server.ts';

const CANARY = 'canary-c0ffee';
const SECRETS: Record<string, string> = {
  SERVICE_TOKEN: `${CANARY}-service-token-0123456789abcdef0123`,
  OPENAI_API_KEY: `${CANARY}-openai`,
  AWS_SECRET_ACCESS_KEY: `${CANARY}-aws`,
  DATABASE_URL: `postgres://agentd:${CANARY}-db@127.0.0.1/agentd`,
  LOCAL_MODEL_CREDENTIAL: `${CANARY}-configured-apiKeyEnv`,
};
Object.assign(process.env, SECRETS);

type ShellArguments = string[] | string | { command: string[] | string; workdir: string };
const call = (callId: string, command: ShellArguments) => ({ name: 'shell', arguments: JSON.stringify(typeof command === 'object' && !Array.isArray(command) ? command : { command }), callId });

describe('confinement of what the model runs (real server, real bubblewrap)', () => {
  const harness = useFakeServer({
    env: { LOCAL_MODEL_CREDENTIAL: SECRETS.LOCAL_MODEL_CREDENTIAL },
    models: (baseUrl) => {
      const models = fakeProviderModels(baseUrl);
      return { ...models, connections: models.connections.map((connection, index) => (index === 0 ? { ...connection, apiKeyEnv: 'LOCAL_MODEL_CREDENTIAL' } : connection)) };
    },
  });
  let hostProcess: ChildProcess;
  let stateDir: string;

  before(() => {
    stateDir = harness.server.backend.stateDir;
    writeFileSync(join(stateDir, 'planted-secret.txt'), `${CANARY}-state-file\n`);
    // What a cloned repository could carry: links the classifier takes for workspace paths.
    symlinkSync('/proc', join(harness.server.workspace, 'proc-link'));
    symlinkSync(stateDir, join(harness.server.workspace, 'state-link'));
    hostProcess = spawn('sleep', ['1001'], { env: { ...process.env, HOST_ONLY: `${CANARY}-host-process` }, stdio: 'ignore' });
  });
  after(() => {
    hostProcess.kill('SIGKILL');
  });

  const finishedOutput = (turnId: string, callId: string): string =>
    harness.events.ofTurn(turnId).find((event) => event.type === 'tool.finished' && event.data.data.callId === callId)!.data.data.output;

  async function assertNoSecretEscaped(sessionId: string) {
    const history = (await harness.server.request('GET', `/v1/sessions/${sessionId}/history`)).json;
    const places = { 'the model': JSON.stringify(harness.fake.requests.map((request) => request.body)), history: JSON.stringify(history), events: JSON.stringify(harness.events.events) };
    for (const [place, text] of Object.entries(places)) assert.ok(!text.includes(CANARY), `a secret reached ${place}`);
  }

  /** Runs one turn of shell calls, approving every request it raises; returns the turn and its approvals. */
  async function runApproving(commands: [string, ShellArguments][]) {
    const session = await harness.newSession();
    harness.fake.enqueue({ kind: 'reply', toolCalls: commands.map(([callId, command]) => call(callId, command)) }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, 'look around');
    let approvals = 0;
    for (;;) {
      const status = (await harness.server.request('GET', `/v1/turns/${turn.id}`)).json.status;
      if (['completed', 'failed', 'cancelled'].includes(status)) break;
      for (const request of (await harness.server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data) {
        await harness.resolve(request.id, { decision: 'allow_once' });
        approvals++;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal((await waitForTurn(harness.server, turn.id)).status, 'completed');
    return { session, turn, approvals };
  }

  it('commands that run unasked run in the read-only view and see no secret', async () => {
    writeFileSync(join(harness.server.workspace, 'notes.txt'), 'plain notes\n');
    const { session, turn, approvals } = await runApproving([
      ['call_env', ['env']],
      ['call_printenv', 'printenv'],
      ['call_notes', 'cat notes.txt'],
    ]);
    assert.equal(approvals, 0, 'all ran unasked');
    const env = finishedOutput(turn.id, 'call_env');
    assert.match(env, /Exit code: 0[\s\S]*^PATH=/m);
    assert.match(env, /^HOME=\/tmp$/m, 'the private HOME of the confined read-only view');
    assert.match(finishedOutput(turn.id, 'call_notes'), /plain notes/);
    await assertNoSecretEscaped(session.id);
  });

  it('approved commands, symlink tricks included, cannot read /proc of the server, its state dir or its environment', async () => {
    const { session, turn, approvals } = await runApproving([
      ['call_server_environ', `cat /proc/${process.pid}/environ /proc/${process.pid}/cmdline; ls /proc`],
      ['call_link_environ', `cat proc-link/${process.pid}/environ proc-link/${hostProcess.pid}/environ`],
      ['call_ps', ['ps', '-e', '-o', 'pid=,args=']],
      ['call_state', `ls -a ${stateDir}; cat ${stateDir}/agentd.sqlite state-link/planted-secret.txt`],
      ['call_write', 'echo approved > approved.txt && env'],
    ]);
    assert.equal(approvals, 5);
    const environ = finishedOutput(turn.id, 'call_server_environ');
    assert.match(environ, new RegExp(`/proc/${process.pid}/environ: No such file or directory`));
    const listed = environ.split('\n').filter((line) => /^\d+$/.test(line)).map(Number);
    assert.ok(listed.length > 0 && listed.length < 10 && !listed.includes(process.pid) && !listed.includes(hostProcess.pid!), `a fresh /proc: ${listed}`);
    assert.match(finishedOutput(turn.id, 'call_link_environ'), new RegExp(`proc-link/${process.pid}/environ: No such file or directory`));
    const processes = finishedOutput(turn.id, 'call_ps').split('Output:\n')[1].trim().split('\n');
    assert.ok(processes.length <= 4 && !processes.some((line) => /^\s*\d+\s+(\S*\/)?(node|sleep)\b/.test(line)), `only the sandbox's processes: ${processes.join(' | ')}`);
    const state = finishedOutput(turn.id, 'call_state');
    assert.match(state, /agentd\.sqlite: No such file or directory/);
    assert.match(state, /planted-secret\.txt: No such file or directory/);
    assert.equal(readFileSync(join(harness.server.workspace, 'approved.txt'), 'utf8'), 'approved\n', 'approved work lands on the host');
    await assertNoSecretEscaped(session.id);
  });

  it('a silently allowed git diff whose embedded bare repository runs diff.external gets no capability: the workspace stays read-only', async () => {
    const workspace = harness.server.workspace;
    const source = join(workspace, '..', `bare-source-${process.pid}`);
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: source } });
    git('init', '-q', source);
    for (const text of ['one', 'two']) {
      writeFileSync(join(source, 'file.txt'), `${text}\n`);
      git('-C', source, 'add', 'file.txt');
      git('-C', source, '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-qm', text);
    }
    const bare = join(workspace, 'vendored.git');
    git('clone', '-q', '--bare', source, bare);
    // what a cloned repository can carry: its own config naming a program of its own
    writeFileSync(join(bare, 'diff-helper.sh'), [
      '#!/bin/sh',
      `mount -o remount,rw,bind ${workspace} ${workspace} 2>/dev/null && echo REMOUNTED`,
      `mount -t tmpfs none ${workspace} 2>/dev/null && echo MOUNTED`,
      `echo escaped > ${workspace}/escaped.txt 2>/dev/null && echo WROTE`,
      'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status',
      'echo helper-ran',
    ].join('\n') + '\n', { mode: 0o755 });
    git('--git-dir', bare, 'config', 'diff.external', join(bare, 'diff-helper.sh'));
    const { turn, approvals } = await runApproving([['call_diff', { command: ['git', 'diff', 'HEAD~1', 'HEAD'], workdir: 'vendored.git' }]]);
    assert.equal(approvals, 0, 'git diff runs unasked');
    const output = finishedOutput(turn.id, 'call_diff');
    assert.match(output, /helper-ran/, output);
    assert.doesNotMatch(output, /REMOUNTED|MOUNTED|WROTE/, output);
    assert.match(output, /CapEff:\s+0+$/m);
    assert.match(output, /NoNewPrivs:\s+1$/m);
    assert.throws(() => readFileSync(join(workspace, 'escaped.txt')), /ENOENT/);
  });

  it('cancelling a turn during a long confined command leaves no process behind', async () => {
    const session = await harness.newSession();
    execFileSync('mkfifo', [join(harness.server.workspace, 'cancel-me-4711.fifo')]);
    harness.fake.enqueue({ kind: 'reply', toolCalls: [call('call_block', ['cat', 'cancel-me-4711.fifo'])] }, { kind: 'reply', text: 'unreachable' });
    const turn = await harness.submit(session.id, 'read the pipe');
    await waitUntil(() => hostProcessesRunning('cancel-me-4711.fifo').length === 1);
    assert.deepEqual(harness.events.ofTurn(turn.id).filter((event) => event.type === 'request.created'), [], 'it runs unasked, confined');
    const cancelled = await harness.server.request('POST', `/v1/turns/${turn.id}/cancel`);
    assert.equal(cancelled.json.status, 'cancelled');
    assert.deepEqual(hostProcessesRunning('cancel-me-4711.fifo'), [], 'gone before the cancel answered');
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Host processes (not bwrap itself) whose command line mentions `text`. */
function hostProcessesRunning(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
        return cmdline.includes(text) && !cmdline.includes('bwrap') && state !== 'Z';
      } catch {
        return false;
      }
    })
    .map(Number);
}
