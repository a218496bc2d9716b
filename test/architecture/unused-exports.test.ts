/**
 * Dead code stays out (issue 40): knip, configured for this layout in knip.json (the entries are
 * the two bundles' mains, the SDK, bin/, bench/, scripts/ and the tests, and the modules the build
 * scripts import from dist/, which knip cannot trace to src/), finds no unused file,
 * dependency or export anywhere in the repository. An export only its own file uses is not an
 * export: drop the keyword.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const REPOSITORY = new URL('../..', import.meta.url).pathname;

describe('unused code', () => {
  it('knip finds no unused file, dependency or export', () => {
    const knip = spawnSync(join(REPOSITORY, 'node_modules', '.bin', 'knip'), ['--no-progress', '--no-config-hints'], { cwd: REPOSITORY, encoding: 'utf8', timeout: 300_000 });
    assert.equal(knip.status, 0, `knip reports unused code (run \`npx knip\`):\n${knip.stdout}${knip.stderr}`);
  });
});
