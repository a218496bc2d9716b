// Near misses of workspace containment (workspace/paths.ts): whole-segment comparison, look-alike
// siblings, `..` applied after the symlinks before it (as the kernel does), and names that do not
// exist yet, on a directory tree the test builds.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { canonicalizeInside, canonicalizeRoot, isInside, PathError } from '../../src/workspace/paths.ts';

const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-edges-paths-')));
after(() => rmSync(top, { recursive: true, force: true }));

const workspace = path.join(top, 'ws');
const cwd = path.join(workspace, 'project');
const otherRoot = path.join(top, 'other');
const outside = path.join(top, 'outside');
for (const directory of [cwd, otherRoot, outside, path.join(workspace, 'sibling')]) mkdirSync(directory, { recursive: true });
mkdirSync(`${workspace}-evil`);
mkdirSync(`${workspace}evil`);
writeFileSync(path.join(outside, 'secret'), 'secret');
symlinkSync(outside, path.join(cwd, 'out'));
symlinkSync(path.join(workspace, 'sibling'), path.join(cwd, 'in'));
symlinkSync(path.join(cwd, 'out'), path.join(cwd, 'chain'));
symlinkSync('../../outside', path.join(cwd, 'relative-out'));
symlinkSync(path.join(cwd, 'loop-b'), path.join(cwd, 'loop-a'));
symlinkSync(path.join(cwd, 'loop-a'), path.join(cwd, 'loop-b'));

const locationOf = (requested: string) => canonicalizeInside([workspace, otherRoot], requested, cwd).location;

test('isInside compares whole segments', () => {
  assert.equal(isInside('/a/b', '/a/b'), true);
  assert.equal(isInside('/a/b/c', '/a/b'), true);
  assert.equal(isInside('/a/b/..x', '/a/b'), true, 'a name starting with two dots is a name');
  assert.equal(isInside('/a/bc', '/a/b'), false);
  assert.equal(isInside('/a/b-evil', '/a/b'), false);
  assert.equal(isInside('/a', '/a/b'), false);
  assert.equal(isInside('/', '/a/b'), false);
  assert.equal(isInside('/a/c', '/a/b'), false);
});

test('isInside: a child below is inside, a look-alike sibling never (property)', () => {
  const segment = fc.stringMatching(/^[a-z0-9._-]{1,8}$/).filter((name) => name !== '.' && name !== '..');
  fc.assert(
    fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), fc.array(segment, { minLength: 1, maxLength: 3 }), segment, (parentParts, childParts, suffix) => {
      const parent = `/${parentParts.join('/')}`;
      assert.equal(isInside(`${parent}/${childParts.join('/')}`, parent), true);
      assert.equal(isInside(`${parent}${suffix}`, parent), false);
      assert.equal(isInside(path.dirname(parent), parent), false);
    }),
    { numRuns: 300 },
  );
});

test('canonicalizeInside: the cwd, another root, and outside, at their edges', () => {
  assert.equal(locationOf('.'), 'cwd');
  assert.equal(locationOf(cwd), 'cwd');
  assert.equal(locationOf('new/deeper/file'), 'cwd', 'a path that does not exist yet');
  assert.equal(locationOf('..'), 'root', 'the root holding the cwd');
  assert.equal(locationOf('../sibling'), 'root');
  assert.equal(locationOf('in/x'), 'root', 'a symlink to elsewhere in the root');
  assert.equal(locationOf(path.join(otherRoot, 'x')), 'root');
  assert.equal(locationOf('../..'), 'outside');
  assert.equal(locationOf(`${workspace}-evil/x`), 'outside', 'a sibling named like the root plus a suffix');
  assert.equal(locationOf(`${workspace}evil`), 'outside');
  assert.equal(locationOf(`${otherRoot}x`), 'outside');
  assert.equal(locationOf('/'), 'outside');
});

test('canonicalizeInside: symlinks are followed before `..`, as the kernel does', () => {
  assert.equal(locationOf('out/secret'), 'outside');
  assert.equal(locationOf('chain/secret'), 'outside', 'a symlink to a symlink');
  assert.equal(locationOf('relative-out/secret'), 'outside', 'a relative target');
  assert.equal(locationOf('out/..'), 'outside', 'lexically the cwd, really the parent of outside');
  assert.equal(locationOf('out/../ws/project'), 'cwd', 'and back in through the real path');
  assert.equal(locationOf('./out'), 'outside');
  assert.equal(locationOf('in/..'), 'root', 'in is ws/sibling, so .. is ws, not the cwd');
  assert.equal(locationOf('in/../project'), 'cwd');
});

test('canonicalizeInside: a name that does not exist, then `..`, then a symlink still follows the symlink', () => {
  // `mkdir -p missing/../out/x` creates x in outside: the classification must say so
  assert.equal(canonicalizeInside([workspace], 'missing/../out/x', cwd).resolved, path.join(outside, 'x'));
  assert.equal(locationOf('missing/../out/x'), 'outside');
  assert.equal(locationOf('a/b/../../out/secret'), 'outside');
  assert.equal(locationOf('missing/../../project/out'), 'outside');
  assert.equal(locationOf('missing/../in'), 'root');
  assert.equal(locationOf('missing/more/../x'), 'cwd', 'still inside the name that does not exist');
});

test('canonicalizeInside: a symlink loop is an error, not a hang', () => {
  assert.throws(() => locationOf('loop-a/x'), PathError);
});

test('canonicalizeRoot: the filesystem root and relative or missing roots are refused', () => {
  assert.equal(canonicalizeRoot(workspace), workspace);
  assert.equal(canonicalizeRoot(`${workspace}/`), workspace);
  assert.equal(canonicalizeRoot(path.join(cwd, 'in')), path.join(workspace, 'sibling'));
  assert.throws(() => canonicalizeRoot('/'), PathError);
  assert.throws(() => canonicalizeRoot(path.join(cwd, 'out', '..', '..', '..', '..', '..', '..', '..', '..', '..', '..')), PathError);
  assert.throws(() => canonicalizeRoot('relative/root'), PathError);
  assert.throws(() => canonicalizeRoot(path.join(top, 'missing')), PathError);
  assert.throws(() => canonicalizeRoot(path.join(outside, 'secret')), PathError, 'a file');
});
