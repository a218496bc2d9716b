// Near misses of workspace containment (workspace/paths.ts): whole-segment comparison, look-alike
// siblings, `..` applied after the symlinks before it (as the kernel does), and names that do not
// exist yet, on a directory tree the test builds.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { canonicalizeInside, canonicalizeRoot, isDirectory, isInside, PathError } from '../../src/workspace/paths.ts';

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

test('symlink hops: a chain of 40 resolves, 41 is refused as the kernel refuses it', () => {
  const chains = path.join(top, 'chains');
  mkdirSync(chains);
  // hop-0 is the directory itself; hop-N links to hop-(N-1), so hop-N takes N lookups of a link
  mkdirSync(path.join(chains, 'hop-0'));
  for (let hop = 1; hop <= 41; hop++) symlinkSync(`hop-${hop - 1}`, path.join(chains, `hop-${hop}`));
  assert.equal(canonicalizeInside([top], path.join(chains, 'hop-40'), top).resolved, path.join(chains, 'hop-0'));
  assert.throws(() => canonicalizeInside([top], path.join(chains, 'hop-41'), top), (error: Error) => {
    assert.ok(error instanceof PathError);
    assert.equal(error.name, 'PathError');
    assert.equal(error.message, `too many levels of symbolic links: ${path.join(chains, 'hop-41')}`);
    return true;
  });
  // hops are counted over the whole lookup, not per link: 18 + 1 (back) + 21 is 40, 19 + 1 + 21 is 41
  symlinkSync(path.join(chains, 'hop-21'), path.join(chains, 'hop-0', 'back'));
  assert.equal(canonicalizeInside([top], path.join(chains, 'hop-18', 'back'), top).resolved, path.join(chains, 'hop-0'));
  assert.throws(() => canonicalizeInside([top], path.join(chains, 'hop-19', 'back'), top), PathError);
});

test('canonicalizeInside: what it reports besides the location (exists, root, requested) and ~ as the home', () => {
  const inCwd = canonicalizeInside([workspace, otherRoot], 'new-file', cwd);
  assert.deepEqual(inCwd, { requested: 'new-file', resolved: path.join(cwd, 'new-file'), location: 'cwd', root: workspace, exists: false });
  assert.deepEqual(canonicalizeInside([workspace, otherRoot], otherRoot, cwd), { requested: otherRoot, resolved: otherRoot, location: 'root', root: otherRoot, exists: true });
  assert.deepEqual(canonicalizeInside([workspace, otherRoot], 'out/secret', cwd), { requested: 'out/secret', resolved: path.join(outside, 'secret'), location: 'outside', root: null, exists: true });
  assert.equal(canonicalizeInside([workspace], 'out', cwd).exists, true, 'a symlink exists as itself');
  assert.equal(canonicalizeInside([workspace], '.', cwd).resolved, cwd);
  assert.equal(canonicalizeInside([workspace], './/./x//', cwd).resolved, path.join(cwd, 'x'), 'empty and . components are skipped');
  const home = process.env.HOME;
  try {
    process.env.HOME = cwd;
    assert.equal(canonicalizeInside([workspace], '~', top).resolved, cwd);
    assert.equal(canonicalizeInside([workspace], '~/a', top).resolved, path.join(cwd, 'a'));
    assert.equal(canonicalizeInside([workspace, otherRoot], '~/a', otherRoot).location, 'root');
    assert.equal(canonicalizeInside([workspace], '~a', cwd).resolved, path.join(cwd, '~a'), '~user is a name here, not a home');
    assert.equal(canonicalizeInside([workspace], 'a/~', cwd).resolved, path.join(cwd, 'a', '~'));
    process.env.HOME = '';
    assert.equal(canonicalizeInside([workspace], '~/a', cwd).resolved, path.join(cwd, '~', 'a'), 'no HOME, no expansion');
  } finally {
    if (home === undefined) delete process.env.HOME;
    else process.env.HOME = home;
  }
});

test('canonicalizeRoot says which rule a root breaks', () => {
  const refusal = (root: string) => {
    try {
      canonicalizeRoot(root);
    } catch (error) {
      assert.ok(error instanceof PathError);
      return error.message;
    }
    return null;
  };
  assert.equal(refusal('relative/root'), 'workspace root must be an absolute path: relative/root');
  assert.equal(refusal(path.join(top, 'missing')), `workspace root does not exist: ${path.join(top, 'missing')}`);
  assert.equal(refusal(path.join(outside, 'secret')), `workspace root is not a directory: ${path.join(outside, 'secret')}`);
  assert.equal(refusal('/'), 'the filesystem root cannot be a workspace root');
  assert.equal(refusal('/.'), 'the filesystem root cannot be a workspace root');
  assert.equal(refusal(path.join(cwd, 'out')), null, 'a symlink to a directory is its target');
  assert.equal(canonicalizeRoot(path.join(cwd, 'out')), outside);
});

test('isDirectory follows symlinks and says false for files and missing names', () => {
  assert.equal(isDirectory(cwd), true);
  assert.equal(isDirectory(path.join(cwd, 'out')), true, 'a symlink to a directory');
  assert.equal(isDirectory(path.join(outside, 'secret')), false);
  assert.equal(isDirectory(path.join(cwd, 'missing')), false);
  assert.equal(isDirectory(path.join(cwd, 'loop-a')), false);
});
