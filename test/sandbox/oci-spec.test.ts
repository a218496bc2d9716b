/** The gVisor sandbox's spec and a command's process as data (runner/runtimes/oci-spec.ts): the same view and powers as a bubblewrap command's. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { commandProcess, handOverSpec, sandboxSpec } from '../../src/sandbox/runner/runtimes/oci-spec.ts';

const system = [
  { path: '/usr', symlink: null },
  { path: '/bin', symlink: 'usr/bin' },
  { path: '/etc/passwd', symlink: null },
  { path: '/etc/ld.so.cache', symlink: null },
];
const identity = { uid: 900_000, gid: 900_000 };

interface Process {
  user: { uid: number; gid: number; additionalGids?: number[] }; args: string[]; env: string[]; cwd: string; capabilities: Record<string, string[]>; noNewPrivileges: boolean; rlimits?: { type: string; hard: number }[];
}

interface Spec {
  process: Process;
  root: { readonly: boolean };
  mounts: { destination: string; type: string; source: string; options?: string[] }[];
  linux: { namespaces: { type: string }[]; uidMappings?: unknown };
}

function spec(home: string | null = '/stage/home'): Spec {
  return sandboxSpec({ rootfs: '/r', system, generatedEtc: '/gen', workspace: '/stage/workspace', home, identity, processes: 512 }) as Spec;
}

describe('the gVisor sandbox of a tenant and its commands', () => {
  it('starts the sandbox with a first process that holds no capability and is not the guest (none of its 512)', () => {
    const { process: first } = spec();
    assert.deepEqual(first.user, { uid: 0, gid: 0, additionalGids: [] });
    for (const set of Object.values(first.capabilities)) assert.deepEqual(set, []);
    assert.equal(first.noNewPrivileges, true);
    assert.deepEqual(first.rlimits, [{ type: 'RLIMIT_NPROC', hard: 512, soft: 512 }]);
  });

  it('runs a command in a PID namespace of its own as the guest\'s unprivileged host user, in its cwd, 512 processes at most', () => {
    const command = commandProcess({ argv: ['sh', '-c', 'id'], cwd: '/workspace/src', env: { PATH: '/usr/bin', HOME: '/home/agent' }, identity, processes: 512 }) as Process;
    assert.deepEqual(command.user, { uid: 900_000, gid: 900_000, additionalGids: [] });
    assert.deepEqual(command.args, ['/usr/bin/unshare', '--pid', '--fork', '--', 'sh', '-c', 'id']);
    // only what unshare needs, which the command's exec clears (the guest is not root); nothing inheritable or ambient
    assert.deepEqual(command.capabilities.effective, ['CAP_SYS_ADMIN']);
    assert.deepEqual(command.capabilities.bounding, ['CAP_SYS_ADMIN']);
    assert.deepEqual(command.capabilities.inheritable, []);
    assert.deepEqual(command.capabilities.ambient, []);
    assert.equal(command.noNewPrivileges, true);
    assert.deepEqual(command.rlimits, [{ type: 'RLIMIT_NPROC', hard: 512, soft: 512 }]);
    assert.deepEqual(command.env, ['PATH=/usr/bin', 'HOME=/home/agent']);
    assert.equal(command.cwd, '/workspace/src');
  });

  it('shows the system read-only, the generated identity files instead of the host\'s, and only the workspace and HOME writable', () => {
    const { mounts, root } = spec();
    assert.equal(root.readonly, true);
    const writable = mounts.filter((mount) => mount.type === 'bind' && mount.options?.includes('rw')).map((mount) => [mount.destination, mount.source]);
    assert.deepEqual(writable, [['/home/agent', '/stage/home'], ['/workspace', '/stage/workspace']]);
    const passwd = mounts.filter((mount) => mount.destination === '/etc/passwd');
    assert.deepEqual(passwd.map((mount) => mount.source), ['/gen/passwd'], 'the host\'s passwd is never bound');
    assert.ok(mounts.some((mount) => mount.destination === '/usr' && mount.options?.includes('ro')));
    assert.ok(!mounts.some((mount) => mount.destination === '/bin'), 'a symlink of the host is recreated in the root, not bound');
    assert.equal(spec(null).mounts.find((mount) => mount.destination === '/home/agent')?.type, 'tmpfs');
  });

  it('makes no network namespace of its own (runsc serves the guest\'s sockets from the tenant\'s filtered one) and no user namespace', () => {
    const { linux } = spec();
    assert.deepEqual(linux.namespaces.map((namespace) => namespace.type).sort(), ['ipc', 'mount', 'pid', 'uts']);
    assert.equal(linux.uidMappings, undefined);
  });

  it('hands the directories over with CAP_CHOWN and CAP_DAC_READ_SEARCH only, writable nowhere else', () => {
    const handOver = handOverSpec('/r', system, ['/stage/workspace'], identity) as Spec;
    assert.deepEqual(handOver.process.capabilities.effective, ['CAP_CHOWN', 'CAP_DAC_READ_SEARCH']);
    assert.deepEqual(handOver.process.capabilities.bounding, ['CAP_CHOWN', 'CAP_DAC_READ_SEARCH']);
    assert.deepEqual(handOver.mounts.filter((mount) => mount.options?.includes('rw')).map((mount) => mount.destination), ['/target/0']);
    assert.ok(handOver.process.args.includes('-P') && handOver.process.args.includes('-xdev'), 'find follows no symlink and stays on the file system');
  });
});
