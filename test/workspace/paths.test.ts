import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canonicalizeInside, canonicalizeRoot, isInside, PathError } from '../../src/workspace/paths.ts';

/** A real directory tree: <tmp>/roots/a (with a session dir a/project), <tmp>/roots/b, <tmp>/outside. */
function makeTree() {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-paths-')));
  const rootA = path.join(top, 'roots', 'a');
  const rootB = path.join(top, 'roots', 'b');
  const cwd = path.join(rootA, 'project');
  const outside = path.join(top, 'outside');
  for (const dir of [cwd, rootB, outside]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(cwd, 'file.txt'), 'hello');
  writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  return { top, rootA, rootB, cwd, outside, roots: [rootA, rootB], cleanup: () => rmSync(top, { recursive: true, force: true }) };
}

test('a relative path inside the session cwd is classified cwd and resolved absolutely', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  const result = canonicalizeInside(tree.roots, 'file.txt', tree.cwd);
  assert.equal(result.location, 'cwd');
  assert.equal(result.resolved, path.join(tree.cwd, 'file.txt'));
  assert.equal(result.root, tree.rootA);
  assert.equal(result.exists, true);
});

test('a path elsewhere in the same root or another root is classified root', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  assert.equal(canonicalizeInside(tree.roots, '..', tree.cwd).location, 'root');
  const other = canonicalizeInside(tree.roots, path.join(tree.rootB, 'x'), tree.cwd);
  assert.equal(other.location, 'root');
  assert.equal(other.root, tree.rootB);
});

test('.. traversal out of every root is outside', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  const result = canonicalizeInside(tree.roots, '../../../outside/secret.txt', tree.cwd);
  assert.equal(result.location, 'outside');
  assert.equal(result.root, null);
  assert.equal(result.resolved, path.join(tree.outside, 'secret.txt'));
});

test('prefix confusion: a sibling whose name extends the root name is outside', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  mkdirSync(`${tree.rootA}c`);
  assert.equal(canonicalizeInside(tree.roots, `${tree.rootA}c/file`, tree.cwd).location, 'outside');
  assert.equal(isInside('/a/bc', '/a/b'), false);
  assert.equal(isInside('/a/b/c', '/a/b'), true);
  assert.equal(isInside('/a/b', '/a/b'), true);
  assert.equal(isInside('/a/..b', '/a'), true);
});

test('a symlink in the cwd pointing to /etc leads outside', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync('/etc', path.join(tree.cwd, 'etc-link'));
  const result = canonicalizeInside(tree.roots, 'etc-link/passwd', tree.cwd);
  assert.equal(result.location, 'outside');
  assert.equal(result.resolved, path.join(realpathSync('/etc'), 'passwd'));
});

test('a symlinked directory inside a root pointing out is outside, even for files not yet created', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync(tree.outside, path.join(tree.rootB, 'escape'));
  assert.equal(canonicalizeInside(tree.roots, path.join(tree.rootB, 'escape', 'secret.txt'), tree.cwd).location, 'outside');
  const notYet = canonicalizeInside(tree.roots, path.join(tree.rootB, 'escape', 'new', 'deep.txt'), tree.cwd);
  assert.equal(notYet.location, 'outside');
  assert.equal(notYet.exists, false);
  assert.equal(notYet.resolved, path.join(tree.outside, 'new', 'deep.txt'));
});

test('a dangling symlink is followed to its target, so creating through it cannot escape', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync(path.join(tree.outside, 'not-yet.txt'), path.join(tree.cwd, 'dangling'));
  const result = canonicalizeInside(tree.roots, 'dangling', tree.cwd);
  assert.equal(result.location, 'outside');
  assert.equal(result.resolved, path.join(tree.outside, 'not-yet.txt'));
});

test('.. after a symlink applies to the link target, as the kernel does', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync(path.join(tree.outside), path.join(tree.cwd, 'out'));
  const result = canonicalizeInside(tree.roots, 'out/../outside/secret.txt', tree.cwd);
  assert.equal(result.resolved, path.join(tree.outside, 'secret.txt'));
  assert.equal(result.location, 'outside');
});

test('a symlink that stays inside the cwd is fine', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync('file.txt', path.join(tree.cwd, 'alias'));
  const result = canonicalizeInside(tree.roots, 'alias', tree.cwd);
  assert.equal(result.location, 'cwd');
  assert.equal(result.resolved, path.join(tree.cwd, 'file.txt'));
});

test('a nonexistent path resolves through its nearest existing ancestor', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  const result = canonicalizeInside(tree.roots, 'new/dir/file.ts', tree.cwd);
  assert.equal(result.location, 'cwd');
  assert.equal(result.exists, false);
  assert.equal(result.resolved, path.join(tree.cwd, 'new', 'dir', 'file.ts'));
});

test('a symlink loop is reported, not followed forever', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync('loop-b', path.join(tree.cwd, 'loop-a'));
  symlinkSync('loop-a', path.join(tree.cwd, 'loop-b'));
  assert.throws(() => canonicalizeInside(tree.roots, 'loop-a', tree.cwd), PathError);
});

test('a base outside every root makes nothing count as cwd', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  assert.equal(canonicalizeInside(tree.roots, 'secret.txt', tree.outside).location, 'outside');
});

test('session creation: a requested cwd is checked against the roots', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  assert.equal(canonicalizeInside(tree.roots, tree.cwd, tree.rootA).location, 'cwd');
  assert.equal(canonicalizeInside(tree.roots, tree.rootB, tree.rootA).location, 'root');
  assert.equal(canonicalizeInside(tree.roots, tree.outside, tree.rootA).location, 'outside');
});

test('canonicalizeRoot resolves symlinks and rejects missing, relative, file and filesystem-root paths', (t) => {
  const tree = makeTree();
  t.after(tree.cleanup);
  symlinkSync(tree.rootA, path.join(tree.top, 'root-link'));
  assert.equal(canonicalizeRoot(path.join(tree.top, 'root-link')), tree.rootA);
  assert.throws(() => canonicalizeRoot(path.join(tree.top, 'missing')), PathError);
  assert.throws(() => canonicalizeRoot('relative/dir'), PathError);
  assert.throws(() => canonicalizeRoot(path.join(tree.cwd, 'file.txt')), PathError);
  assert.throws(() => canonicalizeRoot('/'), PathError);
});
