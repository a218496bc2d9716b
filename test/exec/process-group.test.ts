import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { runInProcessGroup } from '../../src/exec/process-group.ts';

/** Pids whose command line carries `marker`: the processes a test left behind on purpose. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
}

const run = (script: string, timeoutMs: number) =>
  runInProcessGroup({ argv: ['sh', '-c', script], cwd: '/', env: {}, timeoutMs, signal: new AbortController().signal, onOutput() {} });

describe('a command run as a process group', () => {
  it('returns soon after its leader exits, although a process that left the group (setsid) still holds its output', async () => {
    const marker = `${30 + Math.random()}`;
    try {
      const started = Date.now();
      const result = await run(`setsid sleep ${marker} & echo started`, 60_000);
      const elapsed = Date.now() - started;
      assert.equal(result.exitCode, 0);
      assert.equal(result.timedOut, false);
      assert.match(result.output, /^started\n/);
      assert.match(result.output, /no longer read/);
      assert.ok(elapsed < 15_000, `returned after ${elapsed} ms, not at its 60 s timeout`);
      assert.equal(processesWith(marker).length, 1, 'the detached process is the one left running');
    } finally {
      for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL');
    }
  });

  it('a cancel ends the descendants that made a session of their own, as bubblewrap\'s namespace init does', async () => {
    const marker = `${40 + Math.random()}`;
    const abort = new AbortController();
    try {
      const call = runInProcessGroup({
        argv: ['sh', '-c', `setsid -w sh -c 'while :; do sleep ${marker}; done' & echo started; wait`],
        cwd: '/', env: {}, timeoutMs: 60_000, signal: abort.signal, onOutput() {},
      }, { killGraceMs: 500 });
      for (let waited = 0; processesWith(marker).length === 0 && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(processesWith(marker).length > 0, 'the detached loop runs');
      abort.abort();
      const result = await call;
      assert.equal(result.aborted, true);
      for (let waited = 0; processesWith(marker).length > 0 && waited < 3_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(processesWith(marker), [], 'nothing the command started outlives its cancel');
    } finally {
      for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL');
    }
  });

  it('reads the whole output of a leader that writes until it exits', async () => {
    const result = await run('i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done', 60_000);
    assert.equal(result.exitCode, 0);
    assert.match(result.output, /line 1999\n$/);
    assert.doesNotMatch(result.output, /no longer read/);
  });
});
