/**
 * Both ToolExecutors against the real thing: the host one over the process-group runner and the
 * file system, the sandbox one over a real runner, and the sandbox one against runners that are
 * missing, crash, hang at start, speak garbage or die mid-call: a clear error, nothing run on the
 * host, and a fresh sandbox for the next call.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createProcessGroupRunner } from '../../src/exec/process-group.ts';
import { ExecutorError, type RunOutcome, type ToolExecutor } from '../../src/exec/executor.ts';
import { hostExecutor } from '../../src/exec/host-executor.ts';
import { sandboxExecutor } from '../../src/exec/sandbox-executor.ts';
import { RUNNER_SOURCE, scratchDirectory } from '../sandbox/support.ts';

/** A runner program: a shell script, as an operator's --sandbox-runner would be. */
function runnerProgram(body: string): string {
  const path = join(scratchDirectory('agentd-executor-runner-'), 'runner');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

const REAL_RUNNER = `exec ${JSON.stringify(process.execPath)} --import tsx ${RUNNER_SOURCE} "$@"`;

function run(executor: ToolExecutor, script: string, options: { cwd?: string; signal?: AbortSignal; onOutput?: (chunk: string) => void } = {}): Promise<RunOutcome> {
  return executor.run({ argv: ['sh', '-c', script], cwd: options.cwd ?? '', timeoutMs: 30_000, signal: options.signal ?? new AbortController().signal, onOutput: options.onOutput ?? (() => {}) });
}

async function rejectsFromSandbox(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: ExecutorError) => {
    assert.ok(error instanceof ExecutorError, String(error));
    assert.equal(error.reason, 'sandbox');
    assert.match(error.message, /the sandbox failed, nothing ran on the host/);
    assert.match(error.message, message);
    return true;
  });
}

/** Host processes whose command line contains `text`. */
function hostProcessesWith(text: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      return cmdline.includes(text) && !cmdline.includes('sh -c') && state !== 'Z' ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the sandbox executor over a real runner', () => {
  const workspace = scratchDirectory();
  const executor = sandboxExecutor({ runner: runnerProgram(REAL_RUNNER), workspace, readyTimeoutMs: 30_000 });
  after(() => executor.close());

  it('runs a command in a guest cwd, streaming its output, with guest paths only', async () => {
    mkdirSync(join(workspace, 'src'));
    let streamed = '';
    const outcome = await run(executor, 'pwd; echo err >&2; exit 3', { cwd: '/workspace/src', onOutput: (chunk) => (streamed += chunk) });
    assert.equal(outcome.exitCode, 3);
    assert.match(streamed, /^\/workspace\/src$/m);
    assert.match(outcome.output, /err/);
    assert.equal(executor.kind, 'sandbox');
  });

  it('writes, reads, lists and searches at guest paths, and the files land in the host workspace', async () => {
    const bytes = Buffer.from([0, 1, 255, 10]);
    await executor.writeFile('/workspace/new/data.bin', bytes, { createParents: true });
    assert.deepEqual(readFileSync(join(workspace, 'new/data.bin')), bytes);
    assert.deepEqual((await executor.readFile('/workspace/new/data.bin', 1024)).content, bytes);
    assert.deepEqual(await executor.readFile('/workspace/new/data.bin', 2), { content: bytes.subarray(0, 2), truncated: true });
    writeFileSync(join(workspace, 'src/a.ts'), 'const needle = 1;\n');
    assert.deepEqual((await executor.listDirectory('/workspace/src')).entries, [{ name: 'a.ts', type: 'file', size: 18 }]);
    const found = await executor.search({ pattern: 'need+le', path: '/workspace', maxMatches: 10, signal: new AbortController().signal });
    assert.deepEqual(found.matches, [{ path: '/workspace/src/a.ts', line: 1, text: 'const needle = 1;' }]);
  });

  it('fails a file operation with a clear error, and a host path means nothing inside', async () => {
    await assert.rejects(executor.readFile('/workspace/missing.txt', 100), (error: ExecutorError) => error.reason === 'operation' && /missing\.txt/.test(error.message));
    await assert.rejects(executor.readFile(join(workspace, 'src/a.ts'), 100), (error: ExecutorError) => error.reason === 'operation');
    await assert.rejects(executor.writeFile('/workspace/no/such/dir/x', Buffer.from('x')), (error: ExecutorError) => error.reason === 'operation');
  });

  it('cancel kills the sandboxed process tree, daemonised children included', async () => {
    const controller = new AbortController();
    const marker = '987661';
    const running = run(executor, `sleep ${marker} & (setsid sleep ${marker}.5 &); echo started; wait`, { signal: controller.signal });
    await waitUntil(() => hostProcessesWith(`sleep ${marker}`).length === 2);
    controller.abort();
    const outcome = await running;
    assert.equal(outcome.cancelled, true);
    await waitUntil(() => hostProcessesWith(`sleep ${marker}`).length === 0, 5000);
  });

  it('a runner that dies mid-call fails that call, and the next call gets a fresh sandbox', async () => {
    const running = run(executor, 'echo started; sleep 300');
    const runner = () => hostProcessesWith(RUNNER_SOURCE).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(workspace));
    await waitUntil(() => runner().length === 1 && hostProcessesWith('sleep 300').length > 0);
    const [pid] = runner();
    process.kill(pid, 'SIGKILL');
    await rejectsFromSandbox(running, /ended \(signal SIGKILL\)/);
    assert.equal((await run(executor, 'echo fresh')).output, 'fresh\n');
    assert.notDeepEqual(runner(), [pid]);
  });
});

describe('the sandbox executor fails closed', () => {
  const attempts: [string, string, RegExp][] = [
    ['missing', '', /cannot start the sandbox runner: spawn .* ENOENT/],
    ['crashing at start', 'echo segfault >&2; exit 139', /ended \(exit code 139\): segfault/],
    ['hanging at start', 'sleep 60', /no ready line within 1000 ms/],
    ['speaking garbage', 'echo "Welcome to bash"; sleep 60', /not a JSON object/],
  ];
  for (const [name, body, message] of attempts) {
    it(`a runner ${name}: a clear error, nothing run on the host`, async () => {
      const workspace = scratchDirectory();
      const runner = body === '' ? '/nonexistent/agentd-sandbox' : runnerProgram(body);
      const executor = sandboxExecutor({ runner, workspace, readyTimeoutMs: 1000 });
      await rejectsFromSandbox(run(executor, `touch ${workspace}/ran-on-host /workspace/ran`), message);
      await rejectsFromSandbox(executor.writeFile('/workspace/x', Buffer.from('x')), message);
      assert.deepEqual(readdirSync(workspace), []);
      await executor.close();
    });
  }

  it('after a failed start, the next call starts a fresh runner', async () => {
    const workspace = scratchDirectory();
    const starts = join(scratchDirectory(), 'starts');
    const executor = sandboxExecutor({
      runner: runnerProgram(`echo x >> ${starts}; [ "$(wc -l < ${starts})" -gt 1 ] || { echo garbage; exit 1; }; ${REAL_RUNNER}`),
      workspace,
      readyTimeoutMs: 30_000,
    });
    await rejectsFromSandbox(run(executor, 'true'), /not a JSON object|did not begin with a ready line/);
    assert.equal((await run(executor, 'echo second')).output, 'second\n');
    assert.equal(readFileSync(starts, 'utf8'), 'x\nx\n');
    await executor.close();
  });
});

describe('the host executor', () => {
  const root = scratchDirectory();
  const executor = hostExecutor({ runner: createProcessGroupRunner({ killGraceMs: 300 }) });

  it('runs a command at a host path, streaming, and cancel ends its process group', async () => {
    let streamed = '';
    const outcome = await run(executor, 'pwd; exit 4', { cwd: root, onOutput: (chunk) => (streamed += chunk) });
    assert.equal(outcome.exitCode, 4);
    assert.equal(streamed, `${root}\n`);
    const controller = new AbortController();
    const running = run(executor, 'sleep 987662 & echo started; wait', { cwd: root, signal: controller.signal });
    await waitUntil(() => hostProcessesWith('sleep 987662').length === 1);
    controller.abort();
    assert.equal((await running).cancelled, true);
    assert.deepEqual(hostProcessesWith('sleep 987662'), []);
  });

  it('writes, reads, lists and searches at host paths', async () => {
    await executor.writeFile(join(root, 'deep/dir/a.txt'), Buffer.from('find the needle\n'), { createParents: true });
    assert.equal(readFileSync(join(root, 'deep/dir/a.txt'), 'utf8'), 'find the needle\n');
    assert.deepEqual(await executor.readFile(join(root, 'deep/dir/a.txt'), 4), { content: Buffer.from('find'), truncated: true });
    assert.deepEqual((await executor.listDirectory(join(root, 'deep/dir'))).entries, [{ name: 'a.txt', type: 'file', size: 16 }]);
    const found = await executor.search({ pattern: 'need+le', path: root, maxMatches: 10, signal: new AbortController().signal });
    assert.deepEqual(found.matches.map((match) => [match.path, match.line]), [[join(root, 'deep/dir/a.txt'), 1]]);
    await assert.rejects(executor.writeFile(join(root, 'absent/b.txt'), Buffer.from('x')), ExecutorError);
    assert.equal(existsSync(join(root, 'absent')), false, 'no parent made unasked');
  });

  it('refuses to read or write through a symlink planted at the path', async () => {
    const outside = scratchDirectory('agentd-executor-outside-');
    writeFileSync(join(outside, 'secret'), 'host secret');
    symlinkSync(join(outside, 'secret'), join(root, 'link'));
    await assert.rejects(executor.readFile(join(root, 'link'), 100), /symbolic link/);
    await assert.rejects(executor.writeFile(join(root, 'link'), Buffer.from('pwned')), /symbolic link/);
    assert.equal(readFileSync(join(outside, 'secret'), 'utf8'), 'host secret');
  });

  it('never reads, lists, searches or patches the server\'s own files, even inside a workspace root', async () => {
    const workspace = scratchDirectory('agentd-executor-secrets-');
    const stateDir = join(workspace, '.agentd-state');
    mkdirSync(stateDir);
    writeFileSync(join(stateDir, 'agentd.sqlite'), 'canary-3c7e in the database\n');
    writeFileSync(join(workspace, 'token'), 'canary-3c7e-token\n');
    writeFileSync(join(workspace, 'notes.txt'), 'canary-3c7e is the word\n');
    symlinkSync(join(workspace, 'token'), join(workspace, 'token-alias'));
    const guarded = hostExecutor({ runner: createProcessGroupRunner(), serverFiles: [join(workspace, 'token'), stateDir] });
    for (const path of [join(workspace, 'token'), join(stateDir, 'agentd.sqlite')]) {
      await assert.rejects(guarded.readFile(path, 100), /one of agentd's own files/, path);
      await assert.rejects(guarded.writeFile(path, Buffer.from('pwned')), /one of agentd's own files/, path);
      await assert.rejects(guarded.removeFile(path), /one of agentd's own files/, path);
    }
    await assert.rejects(guarded.listDirectory(stateDir), /one of agentd's own files/);
    await assert.rejects(guarded.search({ pattern: 'canary', path: stateDir, maxMatches: 10, signal: new AbortController().signal }), /one of agentd's own files/);
    const names = (await guarded.listDirectory(workspace)).entries.map((entry) => entry.name);
    assert.deepEqual(names, ['notes.txt', 'token-alias'], 'the token and the state dir are left out of the listing');
    const found = await guarded.search({ pattern: 'canary', path: workspace, maxMatches: 10, signal: new AbortController().signal });
    assert.deepEqual(found.matches.map((match) => match.path), [join(workspace, 'notes.txt')]);
    assert.equal(readFileSync(join(workspace, 'token'), 'utf8'), 'canary-3c7e-token\n');
  });
});
