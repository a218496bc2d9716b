import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { detectHostConfinement, probeBubblewrap } from '../../src/exec/host-confinement.ts';
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
  const confinement = await detectHostConfinement({ mode: 'auto', secretPaths: [], logger, bubblewrapPath: '/bin/false' });
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
