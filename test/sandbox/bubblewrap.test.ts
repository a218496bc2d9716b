import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bubblewrapArguments, handOverArguments, KERNEL_INTERFACES, type ReadOnlyHostView, type TenantView } from '../../src/sandbox/bubblewrap.ts';

const SYSTEM = [
  { path: '/usr', symlink: null },
  { path: '/bin', symlink: 'usr/bin' },
  { path: '/etc/passwd', symlink: null },
  { path: '/etc/localtime', symlink: '/usr/share/zoneinfo/UTC' },
];

/** A read-only view, or the writable one with the same command, roots and masks. */
function invocation({ writable = false, ...overrides }: Partial<Omit<ReadOnlyHostView, 'view'>> & { writable?: boolean } = {}) {
  const readOnly: ReadOnlyHostView = {
    view: 'read-only',
    command: ['ls', '-la'],
    cwd: '/work/project',
    env: { PATH: '/usr/bin', HOME: '/home/agentd', TMPDIR: '/var/tmp' },
    visible: ['/work'],
    hidden: [],
    system: SYSTEM,
    ...overrides,
  };
  if (!writable) return readOnly;
  const { system: _system, ...common } = readOnly;
  return { ...common, view: 'writable' as const };
}

/** the flag sequences of an argv, e.g. ['--ro-bind', '/usr', '/usr'] */
function flags(args: string[]): string[][] {
  const separator = args.indexOf('--');
  const groups: string[][] = [];
  for (const arg of args.slice(0, separator)) {
    if (arg.startsWith('--')) groups.push([arg]);
    else groups.at(-1)!.push(arg);
  }
  return groups;
}

const indexOf = (groups: string[][], ...group: string[]) => groups.findIndex((candidate) => candidate.join(' ') === group.join(' '));

test('the read-only view: no network, own PID/IPC/UTS namespaces, fresh /proc, only system entries and roots, read-only', () => {
  const args = bubblewrapArguments(invocation());
  const groups = flags(args);
  for (const expected of [['--unshare-net'], ['--unshare-pid'], ['--unshare-ipc'], ['--unshare-uts'], ['--die-with-parent'], ['--new-session'], ['--clearenv'], ['--proc', '/proc'], ['--dev', '/dev'], ['--ro-bind', '/usr', '/usr'], ['--symlink', 'usr/bin', '/bin'], ['--ro-bind', '/etc/passwd', '/etc/passwd'], ['--symlink', '/usr/share/zoneinfo/UTC', '/etc/localtime'], ['--tmpfs', '/tmp'], ['--ro-bind', '/work', '/work'], ['--chdir', '/work/project']]) {
    assert.notEqual(indexOf(groups, ...expected), -1, expected.join(' '));
  }
  assert.equal(groups.some((group) => group[0] === '--bind' || group[0] === '--dev-bind'), false, 'nothing is writable but the private /tmp');
  assert.deepEqual(args.slice(args.indexOf('--')), ['--', 'ls', '-la']);
});

test('the read-only view gets exactly the given environment, with HOME and TMPDIR on the private /tmp', () => {
  const groups = flags(bubblewrapArguments(invocation()));
  const setenv = groups.filter((group) => group[0] === '--setenv').map((group) => `${group[1]}=${group[2]}`);
  assert.deepEqual(setenv, ['PATH=/usr/bin', 'HOME=/tmp', 'TMPDIR=/tmp']);
  assert.ok(indexOf(groups, '--clearenv') < groups.findIndex((group) => group[0] === '--setenv'));
});

test('the writable view: the host file system with the network, but still a fresh /proc in its own PID namespace and the real HOME', () => {
  const groups = flags(bubblewrapArguments(invocation({ writable: true })));
  assert.equal(indexOf(groups, '--unshare-net'), -1);
  assert.ok(indexOf(groups, '--bind', '/', '/') < indexOf(groups, '--proc', '/proc'), 'the fresh /proc covers the host one');
  assert.notEqual(indexOf(groups, '--unshare-pid'), -1);
  assert.notEqual(indexOf(groups, '--new-session'), -1);
  assert.notEqual(indexOf(groups, '--setenv', 'HOME', '/home/agentd'), -1);
  assert.equal(indexOf(groups, '--ro-bind', '/usr', '/usr'), -1, 'no system list in the host view');
});

test('every view lays the kernel interfaces read-only over its fresh /proc; the writable one also /sys', () => {
  for (const args of [bubblewrapArguments(invocation()), bubblewrapArguments(invocation({ writable: true })), bubblewrapArguments(tenant())]) {
    const groups = flags(args);
    const proc = indexOf(groups, '--proc', '/proc');
    assert.notEqual(proc, -1);
    for (const path of ['/proc/sys', '/proc/sysrq-trigger', ...KERNEL_INTERFACES]) {
      assert.ok(indexOf(groups, '--ro-bind-try', path, path) > proc, `${path} after the fresh /proc`);
    }
  }
  const writable = flags(bubblewrapArguments(invocation({ writable: true })));
  assert.ok(indexOf(writable, '--ro-bind-try', '/sys', '/sys') > indexOf(writable, '--bind', '/', '/'));
});

test('the read-only view drops every capability (a root server keeps none for its unattended commands)', () => {
  assert.notEqual(indexOf(flags(bubblewrapArguments(invocation())), '--cap-drop', 'ALL'), -1);
});

test('the hand-over chown sees only the directories, the system read-only, no /dev or /proc, and may only chown', () => {
  const args = handOverArguments(SYSTEM, ['/srv/tenants/acme/workspace', '/srv/state/acme/home'], 900000, 900000);
  const groups = flags(args);
  assert.deepEqual(groups.filter((group) => /bind|tmpfs|proc|dev/.test(group[0]) && group[0] !== '--die-with-parent'), [
    ['--ro-bind', '/usr', '/usr'], ['--ro-bind', '/etc/passwd', '/etc/passwd'], ['--bind', '/srv/tenants/acme/workspace', '/target/0'], ['--bind', '/srv/state/acme/home', '/target/1'],
  ]);
  assert.deepEqual(groups.filter((group) => group[0].startsWith('--cap-')), [['--cap-drop', 'ALL'], ['--cap-add', 'CAP_CHOWN'], ['--cap-add', 'CAP_DAC_READ_SEARCH']]);
  assert.notEqual(indexOf(groups, '--unshare-net'), -1);
  const command = args.slice(args.indexOf('--') + 1);
  assert.deepEqual(command.slice(0, 4), ['find', '-P', '/target/0', '/target/1']);
  assert.ok(command.includes('-xdev') && command.includes('900000:900000'));
});

test('a secret inside a root is masked over the root, in both views', () => {
  const hidden = [{ path: '/work/.agentd', directory: true }, { path: '/work/token', directory: false }];
  for (const writable of [false, true]) {
    const groups = flags(bubblewrapArguments(invocation({ hidden, writable })));
    const tmpfs = indexOf(groups, '--tmpfs', '/work/.agentd');
    const devNull = indexOf(groups, '--ro-bind', '/dev/null', '/work/token');
    assert.notEqual(tmpfs, -1);
    assert.notEqual(devNull, -1);
    if (!writable) assert.ok(indexOf(groups, '--ro-bind', '/work', '/work') < Math.min(tmpfs, devNull), 'the masks come after the root');
  }
});

test('a root inside a masked directory is bound back over the mask', () => {
  const hidden = [{ path: '/srv/agentd', directory: true }];
  const visible = ['/srv/agentd/workspace'];
  const readOnly = flags(bubblewrapArguments(invocation({ hidden, visible, cwd: visible[0] })));
  assert.ok(indexOf(readOnly, '--tmpfs', '/srv/agentd') < indexOf(readOnly, '--ro-bind', visible[0], visible[0]));
  const writable = flags(bubblewrapArguments(invocation({ hidden, visible, cwd: visible[0], writable: true })));
  assert.ok(indexOf(writable, '--tmpfs', '/srv/agentd') < indexOf(writable, '--bind', visible[0], visible[0]));
});

test('the read-only view masks only what it would otherwise show', () => {
  const hidden = [{ path: '/home/agentd/.local/state/agentd', directory: true }, { path: '/usr/local/etc/agentd-token', directory: false }];
  const groups = flags(bubblewrapArguments(invocation({ hidden })));
  assert.equal(indexOf(groups, '--tmpfs', '/home/agentd/.local/state/agentd'), -1, 'never visible, nothing to mask');
  assert.notEqual(indexOf(groups, '--ro-bind', '/dev/null', '/usr/local/etc/agentd-token'), -1, 'under /usr, so masked');
  const writable = flags(bubblewrapArguments(invocation({ hidden, writable: true })));
  assert.notEqual(indexOf(writable, '--tmpfs', '/home/agentd/.local/state/agentd'), -1);
});

function tenant(overrides: Partial<TenantView> = {}): TenantView {
  return {
    view: 'tenant',
    command: ['make'],
    cwd: '/workspace/src',
    env: { PATH: '/usr/bin', HOME: '/home/agent' },
    workspace: '/srv/tenants/acme/workspace',
    home: null,
    generatedEtc: '/tmp/agentd-sandbox-etc-1-x',
    system: [...SYSTEM, { path: '/etc/hosts', symlink: null }, { path: '/etc/hostname', symlink: null }, { path: '/etc/ssl/certs', symlink: null }],
    ...overrides,
  };
}

test('the tenant view: the unprivileged guest in its own user namespace, no capabilities, its own hostname, the joined network kept', () => {
  const groups = flags(bubblewrapArguments(tenant()));
  for (const expected of [['--unshare-user'], ['--uid', '1000'], ['--gid', '1000'], ['--cap-drop', 'ALL'], ['--hostname', 'sandbox'], ['--unshare-pid'], ['--die-with-parent'], ['--new-session'], ['--proc', '/proc'], ['--dev', '/dev'], ['--tmpfs', '/tmp'], ['--chdir', '/workspace/src']]) {
    assert.notEqual(indexOf(groups, ...expected), -1, expected.join(' '));
  }
  assert.equal(indexOf(groups, '--unshare-net'), -1, 'the tenant network namespace is joined before bwrap, not replaced');
  const setenv = groups.filter((group) => group[0] === '--setenv').map((group) => `${group[1]}=${group[2]}`);
  assert.deepEqual(setenv, ['PATH=/usr/bin', 'HOME=/home/agent'], 'exactly the guest environment');
});

test('the tenant view: the workspace writable at /workspace, the system read-only, the host identity files replaced by generated ones', () => {
  const groups = flags(bubblewrapArguments(tenant()));
  assert.notEqual(indexOf(groups, '--bind', '/srv/tenants/acme/workspace', '/workspace'), -1);
  assert.deepEqual(groups.filter((group) => group[0] === '--bind' || group[0] === '--dev-bind'), [['--bind', '/srv/tenants/acme/workspace', '/workspace']], 'nothing else is writable');
  assert.notEqual(indexOf(groups, '--ro-bind', '/usr', '/usr'), -1);
  assert.notEqual(indexOf(groups, '--ro-bind', '/etc/ssl/certs', '/etc/ssl/certs'), -1);
  for (const name of ['passwd', 'group', 'hosts', 'resolv.conf']) {
    assert.notEqual(indexOf(groups, '--ro-bind', `/tmp/agentd-sandbox-etc-1-x/${name}`, `/etc/${name}`), -1, name);
  }
  for (const host of ['/etc/passwd', '/etc/hosts', '/etc/hostname']) assert.equal(indexOf(groups, '--ro-bind', host, host), -1, `${host} of the host`);
  assert.notEqual(indexOf(groups, '--tmpfs', '/home/agent'), -1, 'a fresh HOME without --home');
  const withHome = flags(bubblewrapArguments(tenant({ home: '/srv/tenants/acme/home' })));
  assert.notEqual(indexOf(withHome, '--bind', '/srv/tenants/acme/home', '/home/agent'), -1);
});
