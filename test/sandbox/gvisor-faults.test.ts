/**
 * Faults of the gVisor runtime (docs/SANDBOX.md, "The gVisor runtime"): runsc's sandbox killed in
 * the middle of a command, the runner killed in the middle of a command, and runsc processes a
 * killed runner left behind. Each time the call ends with a clear outcome or error, nothing ran on
 * the host, and no runsc or guest process outlives its sandbox. And the disk quota, which gVisor's
 * file proxy meets on the tenant's file system. (A guest that fills its memory and
 * a cancel during a command are in limits.test.ts, which runs under both runtimes.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { endOrphanedSandboxes } from '../../src/sandbox/orphan-sweep.ts';
import { runscDirectory } from '../../src/sandbox/runner/runtimes/gvisor-runtime.ts';
import { processesWith, waitUntil } from '../e2e/sandbox-support.ts';
import { sandboxClient, scratchDirectory, shell, tenantGroupsOf } from './support.ts';

const silent = pino({ level: 'silent' });

describe('the gVisor runtime under faults', () => {
  it('reports a command whose runsc sandbox was killed mid-command, leaves no runsc process and keeps serving', async () => {
    const workspace = scratchDirectory();
    const client = sandboxClient(workspace, {}, 'gvisor');
    try {
      await client.start();
      const runsc = runscDirectory(client.runnerPid!);
      let output = '';
      const running = client.call({ type: 'run', shell: 'echo started; sleep 303; touch /workspace/finished' }, { onOutput: (_stream, data) => (output += data) });
      await waitUntil(() => output.includes('started'), 30_000);
      const sandboxes = processesWith(runsc).filter((pid) => processesWith('runsc-sandbox').includes(pid));
      assert.equal(sandboxes.length, 1, 'one runsc sandbox runs the command');
      process.kill(sandboxes[0], 'SIGKILL');
      const result = await running;
      assert.notEqual(result.outcome?.exitCode, 0, 'the command did not succeed');
      assert.equal(existsSync(join(workspace, 'finished')), false);
      await waitUntil(() => processesWith(runsc).length === 0 && tenantGroupsOf(client.runnerPid!).members().length === 0);
      assert.deepEqual(processesWith('sleep 303'), [], 'the guest did not move to the host');
      const { output: after } = await shell(client, 'echo still serving');
      assert.equal(after, 'still serving\n');
    } finally {
      await client.close();
    }
  });

  it('ends every runsc process and the guest when the runner is killed mid-command, and the call fails', async () => {
    const client = sandboxClient(scratchDirectory(), {}, 'gvisor');
    try {
      await client.start();
      const runnerPid = client.runnerPid!;
      let output = '';
      const running = client.call({ type: 'run', shell: 'echo started; sleep 304' }, { onOutput: (_stream, data) => (output += data) });
      await waitUntil(() => output.includes('started'), 30_000);
      assert.ok(processesWith(runscDirectory(runnerPid)).length >= 3, 'runsc, its sandbox and its file proxy run');
      process.kill(runnerPid, 'SIGKILL');
      await assert.rejects(running, (error: Error & { code?: string }) => error.code === 'sandbox_died');
      await waitUntil(() => processesWith(runscDirectory(runnerPid)).length === 0 && processesWith('sleep 304').length === 0);
    } finally {
      await client.close();
    }
  });

  it('lets the start-up sweep end runsc processes of a runner that has ended, and no others', async () => {
    const deadRunner = 999_999_999; // beyond pid_max: never a live process
    // stand-ins with runsc's program names and --root flags (argv0), which sleep until killed
    const standIn = (argv0: string, rootFlags: string[]) => spawn('/usr/bin/python3', ['-c', 'import time; time.sleep(300)', ...rootFlags], { stdio: 'ignore', argv0 });
    const orphan = standIn('/usr/bin/runsc-sandbox', [`--root=${runscDirectory(deadRunner)}/state`, 'boot']);
    const live = standIn('runsc', ['--root', `${runscDirectory(process.pid)}/state`, 'run']);
    try {
      await waitUntil(() => processesWith(runscDirectory(deadRunner)).length === 1 && processesWith(runscDirectory(process.pid)).length === 1);
      assert.equal(endOrphanedSandboxes(scratchDirectory('agentd-sweep-state-'), silent), 1);
      await waitUntil(() => orphan.signalCode !== null);
      assert.equal(orphan.signalCode, 'SIGKILL');
      assert.equal(live.exitCode, null, 'a live runner\'s runsc is left alone');
      assert.equal(live.signalCode, null);
    } finally {
      orphan.kill('SIGKILL');
      live.kill('SIGKILL');
    }
  });

  it('lets a guest fill its tenant\'s file system only to the quota: the write fails with ENOSPC inside', async () => {
    // the tenant's quota is its own ext4 image (tenancy/tenant-disk.ts); 16 MiB here, the workspace on it
    const directory = scratchDirectory('agentd-gvisor-disk-');
    const image = join(directory, 'disk.ext4');
    const mountPoint = join(directory, 'mounted');
    execFileSync('truncate', ['-s', '16M', image]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', image]);
    mkdirSync(mountPoint);
    execFileSync('mount', ['-o', 'loop,nosuid,nodev', image, mountPoint]);
    const client = sandboxClient(mountPoint, {}, 'gvisor');
    try {
      await client.start();
      const { output, result } = await shell(client, 'dd if=/dev/zero of=/workspace/fill bs=1M count=40 2>&1; echo written $(wc -c < /workspace/fill)');
      assert.match(output, /No space left on device/);
      assert.notEqual(result.outcome?.exitCode, null);
      const written = Number(/written (\d+)/.exec(output)![1]);
      assert.ok(written < 16 * 1024 ** 2, `stopped at the quota (${written} bytes)`);
    } finally {
      await client.close();
      execFileSync('umount', ['-l', mountPoint]);
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
