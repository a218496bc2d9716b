/**
 * `agentd` in a terminal whose first `node` is older than 24 (the machine's own, here Debian's
 * nodejs): it hands over to the Node 24 that scripts/ensure-node.sh installed, or says what it
 * needs and exits 2, never a SyntaxError stack.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

/** A node older than 24 on this machine: the first on PATH, or Debian's /usr/bin/node (.ci/run installs nodejs). */
function olderNode(): string {
  const candidates = [...(process.env.PATH ?? '').split(delimiter).map((directory) => join(directory, 'node')), '/usr/bin/node'];
  for (const candidate of candidates) {
    const run = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (run.status === 0 && Number(run.stdout.split('.')[0]) < 24) return candidate;
  }
  assert.fail('no node older than 24 on this machine: install Debian\'s nodejs (.ci/run does)');
}

describe('agentd on a node older than 24', () => {
  const node = olderNode();
  const home = mkdtempSync(join(tmpdir(), 'agentd-old-node-'));
  after(() => rmSync(home, { recursive: true, force: true }));
  const version = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;

  it('says it needs Node 24, naming the version found, with exit status 2 and no stack', () => {
    const run = spawnSync(node, [BIN, '--version'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home } });
    assert.equal(run.status, 2, run.stderr);
    const found = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    assert.equal(run.stderr, `agentd needs Node 24 (found ${found}); see README (Quick start: scripts/ensure-node.sh installs it)\n`);
    assert.equal(run.stdout, '');
  });

  it('hands over to the Node 24 that scripts/ensure-node.sh installed, passing the arguments and the exit status', () => {
    // the layout ensure-node.sh leaves: <cache>/agentd/node-24/bin/node
    const installed = join(home, '.cache', 'agentd', 'node-24', 'bin');
    mkdirSync(installed, { recursive: true });
    symlinkSync(process.execPath, join(installed, 'node'));
    const run = spawnSync(node, [BIN, '--version'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home } });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `${version}\n`);
    const refused = spawnSync(node, [BIN, 'no-such-command'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home } });
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /unknown command: no-such-command/);
  });
});
