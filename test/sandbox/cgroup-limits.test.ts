import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectCgroupLayout } from '../../src/sandbox/cgroups/layout.ts';
import { LimitError, SANDBOX_LIMITS, writeV1Limits, writeV2Limits } from '../../src/sandbox/cgroups/limits.ts';
import { TenantCgroup } from '../../src/sandbox/cgroups/tenant-group.ts';
import { scratchDirectory } from './support.ts';

function fakeV2Tree(controllers = 'cpuset cpu io memory pids'): string {
  const root = scratchDirectory('agentd-fake-cgroup2-');
  writeFileSync(join(root, 'cgroup.controllers'), `${controllers}\n`);
  mkdirSync(join(root, 'system.slice/agentd.service'), { recursive: true });
  writeFileSync(join(root, 'system.slice/agentd.service/cgroup.controllers'), `${controllers}\n`);
  return root;
}

describe('the cgroup limit writer', () => {
  it('detects v2 and uses the runner\'s own (delegated) group as parent', () => {
    const root = fakeV2Tree();
    const result = detectCgroupLayout(root, '0::/system.slice/agentd.service\n');
    assert.deepEqual(result, { ok: true, layout: { version: 2, parent: join(root, 'system.slice/agentd.service') } });
  });

  it('refuses v2 without the pids controller', () => {
    const result = detectCgroupLayout(fakeV2Tree('cpu memory'), '0::/system.slice/agentd.service\n');
    assert.deepEqual(result.ok ? null : result.missing, 'cgroup:pids');
  });

  it('writes the v2 limits: memory.max, no swap, cpu.max for 2 CPUs, pids.max', () => {
    const root = fakeV2Tree();
    const parent = join(root, 'system.slice/agentd.service');
    const group = TenantCgroup.create({ version: 2, parent }, 'tenant-a', SANDBOX_LIMITS);
    const read = (file: string) => readFileSync(join(parent, 'tenant-a', file), 'utf8');
    assert.equal(read('memory.max'), '2147483648');
    assert.equal(read('memory.swap.max'), '0');
    assert.equal(read('cpu.max'), '200000 100000');
    assert.equal(read('pids.max'), '512');
    assert.equal(readFileSync(join(parent, 'cgroup.subtree_control'), 'utf8'), '+memory +cpu +pids');
    assert.equal(readFileSync(join(parent, 'agentd-runner/cgroup.procs'), 'utf8'), String(process.pid), 'the runner left the parent first');
    assert.deepEqual(group.commandGroup().entryFiles, [join(parent, 'tenant-a/command-1/cgroup.procs')], 'each command enters a group of its own inside the tenant\'s');
    assert.deepEqual(group.commandGroup().entryFiles, [join(parent, 'tenant-a/command-2/cgroup.procs')]);
    writeFileSync(join(parent, 'tenant-a/memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n');
    assert.equal(group.oomKills(), 2);
  });

  it('writes the v1 limits with memsw equal to the memory limit', () => {
    const directories = { memory: scratchDirectory(), cpu: scratchDirectory(), pids: scratchDirectory() };
    writeFileSync(join(directories.memory, 'memory.memsw.limit_in_bytes'), '');
    writeV1Limits(directories, SANDBOX_LIMITS, false);
    assert.equal(readFileSync(join(directories.memory, 'memory.limit_in_bytes'), 'utf8'), '2147483648');
    assert.equal(readFileSync(join(directories.memory, 'memory.memsw.limit_in_bytes'), 'utf8'), '2147483648');
    assert.equal(readFileSync(join(directories.cpu, 'cpu.cfs_quota_us'), 'utf8'), '200000');
    assert.equal(readFileSync(join(directories.cpu, 'cpu.cfs_period_us'), 'utf8'), '100000');
    assert.equal(readFileSync(join(directories.pids, 'pids.max'), 'utf8'), '512');
  });

  it('gives each command a v1 group of its own in the pids hierarchy, inside the tenant\'s', () => {
    const parents = { memory: scratchDirectory(), cpu: scratchDirectory(), cpuacct: scratchDirectory(), pids: scratchDirectory() };
    mkdirSync(join(parents.memory, 'tenant-b'));
    writeFileSync(join(parents.memory, 'tenant-b/memory.memsw.limit_in_bytes'), '');
    const group = TenantCgroup.create({ version: 1, parents }, 'tenant-b', SANDBOX_LIMITS);
    const entryFiles = group.commandGroup().entryFiles;
    assert.deepEqual(entryFiles.sort(), [
      join(parents.memory, 'tenant-b/cgroup.procs'),
      join(parents.cpu, 'tenant-b/cgroup.procs'),
      join(parents.cpuacct, 'tenant-b/cgroup.procs'),
      join(parents.pids, 'tenant-b/command-1/cgroup.procs'),
    ].sort(), 'OOM kills and CPU time stay counted in the tenant\'s groups');
    writeFileSync(join(parents.pids, 'tenant-b/cgroup.procs'), '');
    writeFileSync(join(parents.pids, 'tenant-b/command-1/cgroup.procs'), '4194301\n');
    assert.deepEqual(group.members(), [4194301], 'the tenant\'s members include its commands\'');
  });

  it('refuses v1 on a host with swap but no swap accounting', () => {
    const directories = { memory: scratchDirectory(), cpu: scratchDirectory(), pids: scratchDirectory() };
    assert.throws(() => writeV1Limits(directories, SANDBOX_LIMITS, true), (error: LimitError) => error.missing === 'cgroup:memory.memsw');
  });

  it('names the controller it cannot write', () => {
    assert.throws(() => writeV2Limits('/nonexistent/group', SANDBOX_LIMITS), (error: LimitError) => error.missing === 'cgroup:memory');
  });
});
