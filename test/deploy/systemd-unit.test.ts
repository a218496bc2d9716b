/**
 * CONTRACT.md §23: deploy/agentd.service is a hardened unit that `systemd-analyze verify` passes
 * clean, configured through AGENTD_* variables, with the token a credential file.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVE_FLAGS, environmentVariableOf } from '../../src/config/flags.ts';
import { requirePrograms } from './containers.ts';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const UNIT = readFileSync(join(REPOSITORY, 'deploy/agentd.service'), 'utf8');

/** The unit as installed, except that agentd is this checkout's (verify checks that ExecStart exists). */
function withUnit<T>(check: (path: string) => T): T {
  const directory = mkdtempSync(join(tmpdir(), 'agentd-unit-'));
  try {
    const path = join(directory, 'agentd.service');
    writeFileSync(path, UNIT.replaceAll('/usr/local/bin/agentd', join(REPOSITORY, 'bin/agentd.js')));
    return check(path);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

describe('deploy/agentd.service', () => {
  it('passes systemd-analyze verify without a word', () => {
    requirePrograms(['systemd-analyze']);
    withUnit((path) => {
      const verified = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8', cwd: tmpdir() });
      assert.equal(verified.status, 0, verified.stderr);
      assert.equal(`${verified.stdout}${verified.stderr}`.trim(), '');
    });
  });

  it('is hardened: systemd-analyze security rates its exposure OK', () => {
    requirePrograms(['systemd-analyze']);
    withUnit((path) => {
      const rated = spawnSync('systemd-analyze', ['security', '--offline=yes', path], { encoding: 'utf8', cwd: tmpdir() });
      const level = /Overall exposure level for agentd\.service: (\d+\.\d+) (\S+)/.exec(rated.stdout);
      assert.ok(level, rated.stdout + rated.stderr);
      assert.ok(Number(level[1]) <= 3.5 && level[2] === 'OK', level[0]);
    });
  });

  it('configures agentd through its AGENTD_* variables, the token as a credential', () => {
    const variables = [...UNIT.matchAll(/^Environment=(AGENTD_[A-Z_]+)=/gm)].map((match) => match[1]);
    const known = new Set(SERVE_FLAGS.map((flag) => environmentVariableOf(flag.name)));
    assert.ok(variables.length >= 4);
    for (const variable of variables) assert.ok(known.has(variable), `${variable} is a flag's variable`);
    assert.match(UNIT, /^Environment=AGENTD_TOKEN_FILE=%d\/token$/m);
    assert.match(UNIT, /^LoadCredential=token:/m);
    assert.match(UNIT, /^ExecStart=\/usr\/local\/bin\/agentd serve$/m);
  });
});
