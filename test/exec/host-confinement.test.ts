import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { detectHostConfinement, probeBubblewrap } from '../../src/exec/host-confinement.ts';
import { createConfinedRunner } from '../../src/exec/confined-runner.ts';
import { toolEnvironment } from '../../src/exec/tool-environment.ts';
import { bubblewrapArguments } from '../../src/sandbox/bubblewrap.ts';
import { hiddenPaths } from '../../src/sandbox/hidden-paths.ts';
import { inspectSystemEntries } from '../../src/sandbox/system-paths.ts';
import { programOnPath } from '../support/programs.ts';

function recordingLogger() {
  const lines: any[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

test('a working bubblewrap is found by running a confined true, and gives a runner', async () => {
  const { logger, lines } = recordingLogger();
  assert.equal(await probeBubblewrap(programOnPath('bwrap'), inspectSystemEntries()), null);
  const confinement = await detectHostConfinement({ mode: 'auto', secretPaths: [], logger });
  assert.equal(confinement.confined, true);
  assert.deepEqual(lines, []);
});

test('without bubblewrap, one warning says unattended commands fall back to the strict read-only set', async () => {
  const { logger, lines } = recordingLogger();
  const confinement = await detectHostConfinement({ mode: 'auto', secretPaths: [], logger, bubblewrapPath: '/nonexistent/bwrap' });
  assert.equal(confinement.confined, false);
  assert.equal(lines.length, 1);
  assert.equal(lines[0].level, 40);
  assert.match(lines[0].msg, /fall back to the strict read-only set/);
  assert.match(lines[0].reason, /ENOENT/);
});

test('a bubblewrap that starts but cannot confine (here: a program that always fails) is not used', async () => {
  const { logger } = recordingLogger();
  const confinement = await detectHostConfinement({ mode: 'auto', secretPaths: [], logger, bubblewrapPath: programOnPath('false') });
  assert.equal(confinement.confined, false);
});

test('confinement off never probes and never warns', async () => {
  const { logger, lines } = recordingLogger();
  assert.deepEqual(await detectHostConfinement({ mode: 'off', secretPaths: [], logger }), { confined: false });
  assert.deepEqual(lines, []);
});

test('secret paths are masked where they really are; absent ones and files inside a masked directory need no mask', (t) => {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-hidden-')));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const state = path.join(top, 'state');
  mkdirSync(state);
  writeFileSync(path.join(state, 'models.json'), '{}');
  writeFileSync(path.join(top, 'token'), 'x');
  symlinkSync(state, path.join(top, 'state-alias'));
  assert.deepEqual(hiddenPaths([path.join(top, 'state-alias'), path.join(state, 'models.json'), path.join(top, 'token'), path.join(top, 'missing'), null]), [
    { path: state, directory: true },
    { path: path.join(top, 'token'), directory: false },
  ]);
});

// The server's own user is root on CI, through the real confined runner; nobody stands for an
// unprivileged server, running the same read-only view's bwrap argv (node itself lives under /root here).
for (const user of ['the server user', 'nobody'] as const) {
  test(`as ${user}, an unattended command cannot flip a kernel setting, remount or write the workspace, and holds no capability`, async (t) => {
    const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-kernel-attack-')));
    chmodSync(root, 0o755);
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const setting = '/proc/sys/kernel/core_uses_pid';
    const hostValue = readFileSync(setting, 'utf8').trim();
    const flipped = hostValue === '1' ? '0' : '1';
    const attack = [
      `echo ${flipped} > ${setting} && echo FLIPPED`,
      'echo h > /proc/sysrq-trigger && echo SYSRQ',
      `mount -o remount,rw ${root} 2>/dev/null && echo REMOUNTED`,
      `echo escaped > ${root}/escaped.txt 2>/dev/null && echo WROTE`,
      'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status',
      'echo attack-ran',
    ].join('; ');
    const command = ['/bin/sh', '-c', attack];
    const system = inspectSystemEntries();
    try {
      let output: string;
      if (user === 'nobody') {
        const args = bubblewrapArguments({ view: 'read-only', command, cwd: root, env: toolEnvironment(), visible: [root], hidden: [], system });
        output = execFileSync(programOnPath('setpriv'), ['--reuid=65534', '--regid=65534', '--clear-groups', programOnPath('bwrap'), ...args], { encoding: 'utf8', cwd: '/', env: toolEnvironment(), timeout: 30_000 });
      } else {
        const runner = createConfinedRunner({ bubblewrapPath: programOnPath('bwrap'), system, secretPaths: [] });
        const result = await runner({ argv: command, cwd: root, env: {}, view: { writable: false, roots: [root] }, timeoutMs: 30_000, signal: new AbortController().signal, onOutput: () => {} });
        output = result.output;
      }
      assert.match(output, /attack-ran/, output);
      assert.doesNotMatch(output, /FLIPPED|SYSRQ|REMOUNTED|WROTE/, output);
      assert.match(output, /CapEff:\s+0+$/m);
      assert.match(output, /NoNewPrivs:\s+1$/m);
      assert.throws(() => readFileSync(path.join(root, 'escaped.txt')), /ENOENT/);
    } finally {
      const now = readFileSync(setting, 'utf8').trim();
      if (now !== hostValue) writeFileSync(setting, hostValue);
      assert.equal(now, hostValue, 'the host value is unchanged');
    }
  });
}
