import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

test('the shipped bundle (dist/bundle/, a level deeper than tsc\'s output) finds its package.json: --version prints its version', () => {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  const result = spawnSync(process.execPath, [BIN, '--version'], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), version);
});
