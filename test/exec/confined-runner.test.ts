/**
 * Attacks on the confinement itself, with real bubblewrap: what a prompt-injected model would try
 * once a command runs (the classifier is assumed fooled), and what must come out of it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { createConfinedRunner } from '../../src/exec/confined-runner.ts';
import { inspectSystemEntries } from '../../src/sandbox/system-paths.ts';
import type { CommandResult } from '../../src/exec/process-group.ts';
import { programOnPath } from '../support/programs.ts';

const CANARY = 'canary-7f3a9c';

describe('confined commands (real bubblewrap)', () => {
  let top: string;
  let root: string;
  let cwd: string;
  let stateDir: string;
  let tokenFile: string;
  let outside: string;
  let hostProcess: ChildProcess;
  let listener: Server;
  let port: number;
  let connections = 0;
  let runner: ReturnType<typeof createConfinedRunner>;

  before(async () => {
    top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-confined-')));
    root = path.join(top, 'root');
    cwd = path.join(root, 'project');
    mkdirSync(cwd, { recursive: true });
    writeFileSync(path.join(cwd, 'README.md'), 'hello\n');
    // An operator put the state dir inside the workspace root: it must still be masked.
    stateDir = path.join(root, '.agentd-state');
    mkdirSync(stateDir);
    writeFileSync(path.join(stateDir, 'agentd.sqlite'), `SQLite ${CANARY} database\n`);
    tokenFile = path.join(top, 'token');
    writeFileSync(tokenFile, `${CANARY}-token\n`, { mode: 0o600 });
    outside = path.join(top, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, path.join(cwd, 'escape'));
    symlinkSync(stateDir, path.join(cwd, 'state-link'));
    symlinkSync('/proc', path.join(cwd, 'proc-link'));
    hostProcess = spawn('sleep', ['1000'], { env: { ...process.env, HOST_SECRET: `${CANARY}-environ` }, stdio: 'ignore' });
    listener = createServer((socket) => {
      connections++;
      socket.end();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
    runner = createConfinedRunner({ bubblewrapPath: programOnPath('bwrap'), system: inspectSystemEntries(), secretPaths: [stateDir, tokenFile, path.join(cwd, 'late-models.json')] }, { killGraceMs: 500 });
  });
  after(async () => {
    hostProcess.kill('SIGKILL');
    listener.close();
    rmSync(top, { recursive: true, force: true });
  });

  const run = (script: string, writable: boolean, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<CommandResult> =>
    runner({
      argv: ['bash', '-c', script],
      cwd,
      env: { PATH: '/usr/bin:/bin', SERVICE_TOKEN: `${CANARY}-env`, OPENAI_API_KEY: `${CANARY}-env` },
      timeoutMs: options.timeoutMs ?? 20_000,
      signal: options.signal ?? new AbortController().signal,
      onOutput: () => {},
      view: { writable, roots: [root] },
    });

  it('reads the workspace read-only: no write lands, directly, through a symlink or by renaming', async () => {
    const result = await run('echo x > new.txt; echo x >> README.md; touch escape/planted; mv README.md moved.md; mkdir dir; echo x > state-link/agentd.sqlite; echo done', false);
    assert.match(result.output, /Read-only file system/);
    assert.match(result.output, /done/);
    assert.equal(readFileSync(path.join(cwd, 'README.md'), 'utf8'), 'hello\n');
    assert.deepEqual(readdirSync(cwd).sort(), ['README.md', 'escape', 'proc-link', 'state-link']);
    assert.deepEqual(readdirSync(outside), []);
    assert.equal(readFileSync(path.join(stateDir, 'agentd.sqlite'), 'utf8'), `SQLite ${CANARY} database\n`);
  });

  for (const writable of [false, true]) {
    const view = writable ? 'writable' : 'read-only';

    it(`${view} view: no host process is visible, the server's /proc least of all`, async () => {
      const result = await run(
        `ls /proc; echo ---; ls proc-link/; echo ---; cat /proc/${process.pid}/environ /proc/${hostProcess.pid}/environ proc-link/${hostProcess.pid}/environ; ps -e -o pid=,args=`,
        writable,
      );
      assert.doesNotMatch(result.output, new RegExp(CANARY));
      const pids = result.output.split('---')[0].split('\n').filter((line) => /^\d+$/.test(line)).map(Number);
      assert.ok(pids.length > 0 && pids.length < 10, `only the sandbox's own processes: ${pids}`);
      assert.ok(!pids.includes(process.pid) && !pids.includes(hostProcess.pid!));
      assert.match(result.output, new RegExp(`/proc/${process.pid}/environ: No such file or directory`));
      assert.doesNotMatch(result.output, /sleep 1000/);
    });

    it(`${view} view: the server's state dir and token file cannot be read, nor /etc/shadow`, async () => {
      const result = await run(`ls -a ${stateDir}; cat ${stateDir}/agentd.sqlite state-link/agentd.sqlite ${tokenFile} /etc/shadow /etc/gshadow; echo end`, writable);
      assert.match(result.output, /end/);
      assert.doesNotMatch(result.output, new RegExp(CANARY));
      assert.match(result.output, /agentd\.sqlite: No such file or directory/);
    });

    it(`${view} view: the environment is the allowlisted one`, async () => {
      const result = await run('env', writable);
      assert.equal(result.exitCode, 0);
      assert.match(result.output, /^PATH=/m);
      assert.doesNotMatch(result.output, new RegExp(CANARY));
      assert.doesNotMatch(result.output, /SERVICE_TOKEN|OPENAI_API_KEY/);
    });

    it(`${view} view: cancelling a long command leaves no process behind`, async () => {
      const controller = new AbortController();
      const marker = writable ? '987651' : '987652';
      const running = run(`sleep ${marker} & sleep ${marker}.5 & (setsid sleep ${marker}.7 &); echo started; wait`, writable, { signal: controller.signal });
      await waitUntil(() => hostProcessesWith(`sleep ${marker}`).length === 3);
      controller.abort();
      const result = await running;
      assert.equal(result.aborted, true);
      assert.deepEqual(hostProcessesWith(`sleep ${marker}`), [], 'even the setsid one is gone with the PID namespace');
    });
  }

  it('a secret file that appears after start-up is masked too', async () => {
    writeFileSync(path.join(cwd, 'late-models.json'), `{"key": "${CANARY}-late"}`);
    for (const writable of [false, true]) {
      const result = await run('cat late-models.json; echo end', writable);
      assert.match(result.output, /end/);
      assert.doesNotMatch(result.output, new RegExp(CANARY));
    }
    rmSync(path.join(cwd, 'late-models.json'));
  });

  it('read-only view: no network, not even to a server on the loopback', async () => {
    const result = await run(`echo hi > /dev/tcp/127.0.0.1/${port} && echo connected; ls /sys/class/net`, false);
    assert.doesNotMatch(result.output, /connected/);
    assert.equal(connections, 0);
  });

  it('read-only view: the real home, the host /tmp and private keys are not there', async () => {
    const result = await run(`ls ${homedir()} ${outside} /etc/ssl/private /etc/ssh 2>&1; echo "HOME=$HOME"; echo scratch > $HOME/note && cat $HOME/note`, false);
    for (const hidden of [homedir(), outside, '/etc/ssl/private', '/etc/ssh']) {
      if (hidden === '/' || root.startsWith(`${hidden}/`)) continue;
      assert.match(result.output, new RegExp(`${hidden}': No such file or directory`), hidden);
    }
    assert.match(result.output, /^HOME=\/tmp$/m);
    assert.match(result.output, /^scratch$/m, 'the private /tmp is writable');
  });

  it('a timeout ends a confined command and everything it started', async () => {
    const result = await run('sleep 987653 & sleep 987653.5; echo never', false, { timeoutMs: 300 });
    assert.equal(result.timedOut, true);
    assert.doesNotMatch(result.output, /never/);
    assert.deepEqual(hostProcessesWith('sleep 987653'), []);
  });

  it('writable view: ordinary development work lands, owned by the server user, with the network', async () => {
    const result = await run(
      `echo made > made.txt && git init -q repo && cd repo && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m first && git log --oneline | wc -l && echo hi > /dev/tcp/127.0.0.1/${port} && echo connected`,
      true,
    );
    assert.equal(result.exitCode, 0, result.output);
    assert.match(result.output, /^1$/m);
    assert.match(result.output, /connected/);
    assert.equal(statSync(path.join(cwd, 'made.txt')).uid, process.getuid!());
    assert.ok(existsSync(path.join(cwd, 'repo', '.git')));
    await waitUntil(() => connections === 1);
  });
});

/** Host processes whose command line contains `text` (zombies aside). */
function hostProcessesWith(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(text) && !cmdline.includes('bash -c') && !cmdline.includes('bwrap') && state !== 'Z') found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
