/**
 * Under gVisor a tenant's commands share one sandbox, one gVisor kernel (runtimes/gvisor-sandbox.ts):
 * its 512 processes are the tenant's, not each command's, as under bubblewrap's pids cgroup; and
 * yet a cancel ends exactly the cancelled command's processes (each command is its own PID
 * namespace there). Process lists come from inside the guest: this runsc breaks `ls`, not globs.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxClient } from '../../src/exec/sandbox-client.ts';
import { SANDBOX_LIMITS } from '../../src/sandbox/cgroups/limits.ts';
import { waitUntil } from '../e2e/sandbox-support.ts';
import { sandboxClient, scratchDirectory, shell } from './support.ts';

/** Forks up to `count` sleeping children, says how many it got, and ends them once /workspace/release exists. */
const FORK_AND_HOLD = `
my @children;
for (1 .. $ARGV[0]) { my $pid = fork(); last unless defined $pid; if ($pid == 0) { sleep 900; exit 0 } push @children, $pid }
$| = 1; print "forked " . scalar(@children) . "\\n";
sleep 1 until -e "/workspace/release";
kill "KILL", @children; waitpid($_, 0) for @children;
`;

/** Every guest process's command line, as `tr` prints it (arguments followed by a space). */
async function guestCommandLines(client: SandboxClient): Promise<string[]> {
  const { output } = await shell(client, 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f" 2>/dev/null; echo; done');
  return output.split('\n');
}

/** Each command's children: two commands' worth is more than the tenant's 512 (a fork under ptrace on a loaded machine takes a while). */
const FORKS = 260;

describe('the tenant\'s one gVisor sandbox', () => {
  let client: SandboxClient;
  let workspace: string;
  before(async () => {
    workspace = scratchDirectory();
    client = sandboxClient(workspace, {}, 'gvisor');
    await client.start();
  });
  after(() => client.close());

  it('holds two concurrent commands of the tenant to 512 processes together, not 512 each', { timeout: 420_000 }, async () => {
    const outputs = ['', ''];
    const calls = outputs.map((_, index) => client.call({ type: 'run', argv: ['perl', '-e', FORK_AND_HOLD, String(FORKS)], timeoutMs: 400_000 }, { onOutput: (_stream, data) => (outputs[index] += data) }));
    try {
      await waitUntil(() => outputs.every((output) => output.includes('forked')), 380_000);
    } finally {
      writeFileSync(join(workspace, 'release'), '');
    }
    const results = await Promise.all(calls);
    const forked = outputs.map((output) => Number(/forked (\d+)/.exec(output)![1]));
    // each command's unshare and perl and their children are every guest process of the tenant (the sandbox's own first process is not the guest's)
    assert.equal(forked[0] + forked[1] + 4, SANDBOX_LIMITS.processes, `forked ${forked.join(' and ')}`);
    assert.ok(forked.some((count) => count < FORKS), 'one of them was refused');
    for (const result of results) assert.equal(result.outcome?.exitCode, 0);
  });

  it('ends only the cancelled command\'s processes, even those in a session of their own, and the other command goes on', async () => {
    const controller = new AbortController();
    const outputs = { cancelled: '', other: '' };
    const cancelled = client.call({ type: 'run', shell: '(sleep 1001 &); setsid sleep 1002 & echo started; wait' }, { signal: controller.signal, onOutput: (_stream, data) => (outputs.cancelled += data) });
    const other = client.call({ type: 'run', shell: '(sleep 2001 &); setsid sleep 2002 & echo started; while [ ! -e /workspace/done ]; do sleep 0.2; done; echo finished' }, { onOutput: (_stream, data) => (outputs.other += data) });
    await waitUntil(() => outputs.cancelled.includes('started') && outputs.other.includes('started'), 120_000);
    controller.abort();
    assert.equal((await cancelled).outcome?.cancelled, true);
    const left = await guestCommandLines(client);
    assert.deepEqual(left.filter((line) => /^sleep 100[12] $/.test(line)), [], 'the cancelled command left nothing');
    assert.equal(left.filter((line) => /^sleep 200[12] $/.test(line)).length, 2, 'the other command\'s processes run on');
    writeFileSync(join(workspace, 'done'), '');
    const result = await other;
    assert.equal(result.outcome?.exitCode, 0);
    assert.match(outputs.other, /finished/);
    // and a command that ends takes what it left running with it, as bubblewrap's namespace does
    assert.deepEqual((await guestCommandLines(client)).filter((line) => /^sleep (100|200)[12] $/.test(line)), []);
  });
});
