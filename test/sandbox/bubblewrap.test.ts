import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bubblewrapArguments, type BubblewrapInvocation } from '../../src/sandbox/bubblewrap.ts';

const SYSTEM = [
  { path: '/usr', symlink: null },
  { path: '/bin', symlink: 'usr/bin' },
  { path: '/etc/passwd', symlink: null },
  { path: '/etc/localtime', symlink: '/usr/share/zoneinfo/UTC' },
];

function invocation(overrides: Partial<BubblewrapInvocation> = {}): BubblewrapInvocation {
  return {
    command: ['ls', '-la'],
    cwd: '/work/project',
    env: { PATH: '/usr/bin', HOME: '/home/agentd', TMPDIR: '/var/tmp' },
    writable: false,
    visible: ['/work'],
    hidden: [],
    system: SYSTEM,
    ...overrides,
  };
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
