import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectCgroupLayout } from '../../src/sandbox/cgroups/layout.ts';
import { enableV2Controllers, hostHasSwap, LimitError, SANDBOX_LIMITS, writeV1Limits, writeV2Limits } from '../../src/sandbox/cgroups/limits.ts';
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

  it('holds SPEC §8 exactly: 2 CPUs, 2 GiB and 512 processes', () => {
    assert.deepEqual({ ...SANDBOX_LIMITS }, { cpus: 2, memoryBytes: 2147483648, processes: 512 });
    assert.ok(Object.isFrozen(SANDBOX_LIMITS));
  });

  it('reads swap from /proc/swaps: its header alone is no swap, one device line is', () => {
    const swaps = (content: string) => {
      const file = join(scratchDirectory(), 'swaps');
      writeFileSync(file, content);
      return hostHasSwap(file);
    };
    const header = 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n';
    assert.equal(swaps(header), false);
    assert.equal(swaps(`${header}\n\n`), false, 'trailing blank lines are no device');
    assert.equal(swaps(`${header}/swapfile                               file\t\t1048572\t\t0\t\t-2\n`), true);
    assert.equal(hostHasSwap(join(scratchDirectory(), 'missing')), false, 'no /proc/swaps, no swap');
  });

  it('writes v1 without memsw on a host without swap, and creates no memsw file', () => {
    const directories = { memory: scratchDirectory(), cpu: scratchDirectory(), pids: scratchDirectory() };
    writeV1Limits(directories, SANDBOX_LIMITS, false);
    assert.equal(readFileSync(join(directories.memory, 'memory.limit_in_bytes'), 'utf8'), '2147483648');
    assert.equal(existsSync(join(directories.memory, 'memory.memsw.limit_in_bytes')), false);
    assert.equal(readFileSync(join(directories.pids, 'pids.max'), 'utf8'), '512');
  });

  it('says why v1 with swap and no swap accounting is refused, before writing anything', () => {
    const directories = { memory: scratchDirectory(), cpu: scratchDirectory(), pids: scratchDirectory() };
    assert.throws(() => writeV1Limits(directories, SANDBOX_LIMITS, true), (error: LimitError) => {
      assert.equal(error.missing, 'cgroup:memory.memsw');
      assert.match(error.message, /^the host has swap but no swap accounting \(memory\.memsw\), so "without swap" cannot be enforced; boot with swapaccount=1 or disable swap$/);
      return true;
    });
    assert.equal(existsSync(join(directories.cpu, 'cpu.cfs_quota_us')), false);
  });

  // A directory where a limit file belongs makes exactly that write fail (EISDIR), even as root.
  it('names the v1 controller whose file it cannot write, and the value and path', () => {
    for (const [controller, file] of [['memory', 'memory.limit_in_bytes'], ['memory', 'memory.memsw.limit_in_bytes'], ['cpu', 'cpu.cfs_period_us'], ['cpu', 'cpu.cfs_quota_us'], ['pids', 'pids.max']] as const) {
      const directories = { memory: scratchDirectory(), cpu: scratchDirectory(), pids: scratchDirectory() };
      // memsw is written only when it exists: as a directory it both exists and cannot be written
      if (file !== 'memory.memsw.limit_in_bytes') writeFileSync(join(directories.memory, 'memory.memsw.limit_in_bytes'), '');
      mkdirSync(join(directories[controller], file));
      assert.throws(() => writeV1Limits(directories, SANDBOX_LIMITS, false), (error: LimitError) => {
        assert.equal(error.missing, `cgroup:${controller}`, file);
        assert.match(error.message, new RegExp(`^cannot write \\d+ to ${join(directories[controller], file).replaceAll('.', '\\.')}: EISDIR`), file);
        return true;
      });
    }
  });

  it('names the v2 file it cannot write', () => {
    for (const [file, missing, value] of [['memory.max', 'cgroup:memory', '2147483648'], ['memory.swap.max', 'cgroup:memory.swap', '0'], ['cpu.max', 'cgroup:cpu', '200000 100000'], ['pids.max', 'cgroup:pids', '512']]) {
      const group = scratchDirectory();
      mkdirSync(join(group, file));
      assert.throws(() => writeV2Limits(group, SANDBOX_LIMITS), (error: LimitError) => {
        assert.equal(error.missing, missing, file);
        assert.ok(error.message.startsWith(`cannot write ${value} to ${join(group, file)}: EISDIR`), error.message);
        return true;
      });
    }
    const parent = scratchDirectory();
    mkdirSync(join(parent, 'cgroup.subtree_control'));
    assert.throws(() => enableV2Controllers(parent), (error: LimitError) => error.missing === 'cgroup:subtree_control' && error.message.startsWith('cannot write +memory +cpu +pids to'));
  });

  it('names the controller it cannot write', () => {
    assert.throws(() => writeV2Limits('/nonexistent/group', SANDBOX_LIMITS), (error: LimitError) => error.missing === 'cgroup:memory');
  });
});
