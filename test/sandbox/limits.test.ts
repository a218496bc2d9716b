import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { SandboxClient } from '../../src/exec/sandbox-client.ts';
import { processesWith, waitUntil } from '../e2e/sandbox-support.ts';
import { sandboxClient, scratchDirectory, shell } from './support.ts';

/** The runner's tenant group in a v1 hierarchy (this machine): agentd-sandbox-<runner pid>. */
function groupFile(controller: string, runnerPid: number, file: string): string {
  const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((entry) => entry.split(':')[1]?.split(',').includes(controller))!;
  const parent = line.split(':')[2];
  return `/sys/fs/cgroup/${controller}${parent === '/' ? '' : parent}/agentd-sandbox-${runnerPid}/${file}`;
}

/** Every process in the runner's tenant group, its commands' groups included (v1 pids hierarchy). */
function tenantMembers(runnerPid: number): string[] {
  const tenant = groupFile('pids', runnerPid, '');
  const groups = [tenant, ...readdirSync(tenant).filter((name) => name.startsWith('command-')).map((name) => join(tenant, name))];
  return groups.flatMap((group) => readFileSync(join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean));
}

/**
 * bubblewrap as the runner's AGENTD_SANDBOX_BWRAP, except that for a command naming `held-in-setup`
 * the namespace's init waits (--block-fd on a FIFO nobody writes) where a busy machine's mounts
 * keep it: before it takes its own session and arms --die-with-parent.
 */
function bwrapHeldInSetup(): string {
  const directory = scratchDirectory('agentd-held-bwrap-');
  const fifo = join(directory, 'never-written');
  execFileSync('mkfifo', ['-m', '0666', fifo]);
  chmodSync(directory, 0o755); // a root runner runs bwrap as the guest's unprivileged host user
  const wrapper = join(directory, 'bwrap');
  writeFileSync(wrapper, `#!/bin/sh\ncase "$*" in *held-in-setup*) exec /usr/bin/bwrap --block-fd 9 "$@" 9<>${fifo} ;; esac\nexec /usr/bin/bwrap "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

describe('the sandbox limits', () => {
  let client: SandboxClient;
  before(async () => {
    client = sandboxClient(scratchDirectory());
    await client.start();
  });
  after(() => client.close());

  it('writes 2 CPUs, 2 GiB without swap and 512 processes into the tenant group', () => {
    const pid = client.runnerPid!;
    assert.equal(readFileSync(groupFile('memory', pid, 'memory.limit_in_bytes'), 'utf8').trim(), String(2 * 1024 ** 3));
    assert.equal(readFileSync(groupFile('memory', pid, 'memory.memsw.limit_in_bytes'), 'utf8').trim(), String(2 * 1024 ** 3));
    assert.equal(readFileSync(groupFile('cpu', pid, 'cpu.cfs_quota_us'), 'utf8').trim(), '200000');
    assert.equal(readFileSync(groupFile('pids', pid, 'pids.max'), 'utf8').trim(), '512');
  });

  it('kills a command allocating 3 GiB, says so, and keeps serving', async () => {
    const { result } = await shell(client, `python3 -c "
chunks = []
for _ in range(3 * 1024):
    chunks.append(bytearray(1024 * 1024))
print('allocated')
"`);
    assert.equal(result.outcome?.oomKilled, true);
    assert.notEqual(result.outcome?.exitCode, 0);
    const { output } = await shell(client, 'echo still serving');
    assert.equal(output, 'still serving\n');
  });

  it('contains a fork bomb within 512 processes while the host stays responsive', async () => {
    const pid = client.runnerPid!;
    const started = Date.now();
    const bomb = client.call({ type: 'run', shell: 'bomb() { bomb | bomb & }; bomb; sleep 3', timeoutMs: 3000 });
    let peak = 0;
    const hostTicks: number[] = [];
    while (Date.now() - started < 2500) {
      const tick = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 50));
      hostTicks.push(Date.now() - tick);
      peak = Math.max(peak, Number(readFileSync(groupFile('pids', pid, 'pids.current'), 'utf8')));
    }
    const result = await bomb;
    assert.ok(peak <= 512, `peak ${peak}`);
    assert.ok(peak > 100, `the bomb did fork (${peak})`);
    assert.ok(Math.max(...hostTicks) < 1000, `host timer late by ${Math.max(...hostTicks)} ms`);
    assert.equal(result.outcome?.timedOut, true);
    const { output } = await shell(client, 'echo after the bomb');
    assert.equal(output, 'after the bomb\n');
  });

  it('caps CPU at 2: four busy loops get at most about two CPUs of time', async () => {
    const usage = () => Number(readFileSync(groupFile('cpuacct', client.runnerPid!, 'cpuacct.usage'), 'utf8'));
    const before = usage();
    const started = process.hrtime.bigint();
    await shell(client, 'for i in 1 2 3 4; do timeout 2 sh -c "while :; do :; done" & done; wait');
    const wallNs = Number(process.hrtime.bigint() - started);
    const cpus = (usage() - before) / wallNs;
    assert.ok(cpus <= 2.3, `used ${cpus.toFixed(2)} CPUs`);
  });

  it('cancel kills the whole process tree of a command', async () => {
    const controller = new AbortController();
    let output = '';
    const running = client.call({ type: 'run', shell: '(sleep 300 &); setsid sleep 301 & echo started; wait' }, { signal: controller.signal, onOutput: (_s, data) => (output += data) });
    while (!output.includes('started')) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    const result = await running;
    assert.equal(result.outcome?.cancelled, true);
    assert.deepEqual(tenantMembers(client.runnerPid!), [], 'nothing the command started is left');
  });
});

describe('a cancel while bubblewrap is still setting up the sandbox', () => {
  it('ends the call and every process of the sandbox', async () => {
    const client = sandboxClient(scratchDirectory(), { AGENTD_SANDBOX_BWRAP: bwrapHeldInSetup() });
    try {
      await client.start();
      const controller = new AbortController();
      const running = client.call({ type: 'run', shell: 'echo held-in-setup; sleep 302' }, { signal: controller.signal });
      // bwrap and the namespace's init it forked, which waits before its session and --die-with-parent
      await waitUntil(() => processesWith('held-in-setup').length === 2);
      controller.abort();
      const result = await running;
      assert.equal(result.outcome?.cancelled, true);
      assert.deepEqual(processesWith('held-in-setup'), [], 'the namespace\'s init did not outlive bwrap');
      assert.deepEqual(tenantMembers(client.runnerPid!), []);
    } finally {
      await client.close();
    }
  });
});
