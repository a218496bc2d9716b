import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { revertFiles } from '../../src/workspace/revert-files.ts';

const scratch: string[] = [];
after(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const workspace = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-revert-files-'));
  scratch.push(dir);
  return dir;
};
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const file = (text: string, mode = 0o644) => ({ type: 'f' as const, mode, hash: sha(text) });

test('a before-version that cannot be written aside leaves every file as it was and no temporary file behind', () => {
  const root = workspace();
  writeFileSync(join(root, 'a.txt'), 'a after');
  writeFileSync(join(root, 'b.txt'), 'b after');
  assert.throws(
    () => revertFiles({
      root,
      entries: [
        { path: 'a.txt', before: file('a before'), after: file('a after') },
        { path: 'b.txt', before: file('b before'), after: file('b after') },
      ],
      // b's kept bytes do not match its hash: the revert stops before renaming anything
      contents: { [sha('a before')]: Buffer.from('a before').toString('base64'), [sha('b before')]: Buffer.from('corrupted').toString('base64') },
    }),
    /does not match its hash/,
  );
  assert.equal(readFileSync(join(root, 'a.txt'), 'utf8'), 'a after');
  assert.equal(readFileSync(join(root, 'b.txt'), 'utf8'), 'b after');
  assert.deepEqual(readdirSync(root).sort(), ['a.txt', 'b.txt']);
});

test('a session directory reached through a swapped-in symlink is refused whole', () => {
  const base = workspace();
  const elsewhere = workspace();
  writeFileSync(join(elsewhere, 'a.txt'), 'a after');
  symlinkSync(elsewhere, join(base, 'project'));
  const outcome = revertFiles({
    root: join(base, 'project'),
    entries: [{ path: 'a.txt', before: file('a before'), after: file('a after') }],
    contents: { [sha('a before')]: Buffer.from('a before').toString('base64') },
  });
  assert.deepEqual(outcome, { ok: false, conflicts: ['a.txt'] });
  assert.equal(readFileSync(join(elsewhere, 'a.txt'), 'utf8'), 'a after');
  // the link one level up: the directory opens, but it is not the path the session named
  mkdirSync(join(elsewhere, 'inner'));
  writeFileSync(join(elsewhere, 'inner/a.txt'), 'a after');
  const below = revertFiles({ root: join(base, 'project/inner'), entries: [{ path: 'a.txt', before: file('a before'), after: file('a after') }], contents: { [sha('a before')]: Buffer.from('a before').toString('base64') } });
  assert.deepEqual(below, { ok: false, conflicts: ['a.txt'] });
  assert.equal(readFileSync(join(elsewhere, 'inner/a.txt'), 'utf8'), 'a after');
  // and a session directory that is gone
  assert.deepEqual(revertFiles({ root: join(base, 'missing'), entries: [{ path: 'a.txt', before: null, after: file('a after') }], contents: {} }), { ok: false, conflicts: ['a.txt'] });
});

test('a file where the turn left none, or another mode, is a conflict; directories the turn removed are made again', () => {
  const root = workspace();
  writeFileSync(join(root, 'appeared.txt'), 'someone else');
  writeFileSync(join(root, 'mode.sh'), 'x');
  const conflicts = revertFiles({
    root,
    entries: [
      { path: 'appeared.txt', before: file('old'), after: null },
      { path: 'mode.sh', before: file('y'), after: file('x', 0o755) },
    ],
    contents: { [sha('old')]: Buffer.from('old').toString('base64'), [sha('y')]: Buffer.from('y').toString('base64') },
  });
  assert.deepEqual(conflicts, { ok: false, conflicts: ['appeared.txt', 'mode.sh'] });

  const restored = revertFiles({ root, entries: [{ path: 'gone/deep/file.txt', before: file('back', 0o600), after: null }], contents: { [sha('back')]: Buffer.from('back').toString('base64') } });
  assert.deepEqual(restored, { ok: true, reverted: ['gone/deep/file.txt'] });
  assert.equal(readFileSync(join(root, 'gone/deep/file.txt'), 'utf8'), 'back');
});

const link = (target: string) => ({ type: 'l' as const, mode: 0o777, hash: sha(target) });
const kept = (...texts: string[]) => Object.fromEntries(texts.map((text) => [sha(text), Buffer.from(text).toString('base64')]));

test('a whole revert: contents and modes given back (set-user-ID dropped), links made again, created files removed', () => {
  const root = workspace();
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'src/changed.ts'), 'after');
  writeFileSync(join(root, 'created.txt'), 'new');
  symlinkSync('after-target', join(root, 'pointer'));
  writeFileSync(join(root, 'setuid'), 'after');
  const outcome = revertFiles({
    root,
    entries: [
      { path: 'src/changed.ts', before: file('before', 0o640), after: file('after') },
      { path: 'created.txt', before: null, after: file('new') },
      { path: 'pointer', before: link('before-target'), after: link('after-target') },
      { path: 'setuid', before: file('tool', 0o4755), after: file('after') },
    ],
    contents: kept('before', 'before-target', 'tool'),
  });
  assert.deepEqual(outcome, { ok: true, reverted: ['src/changed.ts', 'created.txt', 'pointer', 'setuid'] });
  assert.equal(readFileSync(join(root, 'src/changed.ts'), 'utf8'), 'before');
  assert.equal(statSync(join(root, 'src/changed.ts')).mode & 0o7777, 0o640);
  assert.equal(readlinkSync(join(root, 'pointer')), 'before-target');
  assert.equal(statSync(join(root, 'setuid')).mode & 0o7777, 0o755);
  assert.deepEqual(readdirSync(root).sort(), ['pointer', 'setuid', 'src']);
  assert.deepEqual(readdirSync(join(root, 'src')), ['changed.ts']);
});

test('what is there now decides: another content, another type, a link elsewhere, a directory, or a file where a directory was', () => {
  const root = workspace();
  writeFileSync(join(root, 'content.txt'), 'edited since');
  symlinkSync('x', join(root, 'was-a-file'));
  symlinkSync('somewhere-else', join(root, 'link'));
  mkdirSync(join(root, 'now-a-directory'));
  writeFileSync(join(root, 'parent'), 'a file, not a directory');
  writeFileSync(join(root, 'untouched.txt'), 'same');
  const entries = [
    { path: 'content.txt', before: file('old'), after: file('turn wrote this') },
    { path: 'was-a-file', before: file('old'), after: file('x') },
    { path: 'link', before: link('old'), after: link('turn-target') },
    { path: 'now-a-directory', before: file('old'), after: file('x') },
    { path: 'parent/child.txt', before: file('old'), after: file('x') },
    { path: 'untouched.txt', before: file('old'), after: file('same') },
  ];
  assert.deepEqual(revertFiles({ root, entries, contents: kept('old') }), { ok: false, conflicts: ['content.txt', 'was-a-file', 'link', 'now-a-directory', 'parent/child.txt'] });
  assert.equal(readFileSync(join(root, 'untouched.txt'), 'utf8'), 'same', 'nothing is touched when anything conflicts');
  assert.deepEqual(readdirSync(root).sort(), ['content.txt', 'link', 'now-a-directory', 'parent', 'untouched.txt', 'was-a-file']);
});

test('a directory on the way swapped for a symlink is a conflict, and nothing is written through it', () => {
  const root = workspace();
  const outside = workspace();
  writeFileSync(join(outside, 'a.txt'), 'after');
  symlinkSync(outside, join(root, 'dir'));
  const outcome = revertFiles({ root, entries: [{ path: 'dir/a.txt', before: file('before'), after: file('after') }], contents: kept('before') });
  assert.deepEqual(outcome, { ok: false, conflicts: ['dir/a.txt'] });
  assert.equal(readFileSync(join(outside, 'a.txt'), 'utf8'), 'after');
  // a file the turn created, in a directory that is gone since, is already reverted
  assert.deepEqual(revertFiles({ root, entries: [{ path: 'gone/new.txt', before: null, after: null }], contents: {} }), { ok: true, reverted: ['gone/new.txt'] });
});

test('a before-version whose bytes were not kept is refused before anything is renamed', () => {
  const root = workspace();
  writeFileSync(join(root, 'a.txt'), 'after');
  assert.throws(() => revertFiles({ root, entries: [{ path: 'a.txt', before: file('before'), after: file('after') }], contents: {} }), /a\.txt: the kept content does not match its hash/);
  assert.deepEqual(readdirSync(root), ['a.txt']);
});

const openDescriptors = () => readdirSync('/proc/self/fd').length;

test('no descriptor is left open, whether the revert is done, refused or fails', () => {
  const before = openDescriptors();
  for (let round = 0; round < 3; round++) {
    const root = workspace();
    mkdirSync(join(root, 'deep/er'), { recursive: true });
    writeFileSync(join(root, 'deep/er/a.txt'), 'after');
    writeFileSync(join(root, 'b.txt'), 'after');
    assert.equal(revertFiles({ root, entries: [{ path: 'deep/er/a.txt', before: file('before'), after: file('after') }], contents: kept('before') }).ok, true);
    assert.equal(revertFiles({ root, entries: [{ path: 'deep/er/a.txt', before: file('x'), after: file('not there') }], contents: kept('x') }).ok, false);
    assert.throws(() => revertFiles({ root, entries: [{ path: 'b.txt', before: file('lost'), after: file('after') }], contents: {} }));
  }
  assert.equal(openDescriptors(), before);
});

test('only the type tells a link from the file the turn left: same target bytes, same mode', () => {
  const root = workspace();
  symlinkSync('x', join(root, 'was-a-file'));
  const outcome = revertFiles({ root, entries: [{ path: 'was-a-file', before: file('old'), after: file('x', 0o777) }], contents: kept('old') });
  assert.deepEqual(outcome, { ok: false, conflicts: ['was-a-file'] });
});

test('a file the turn wrote and someone removed since is a conflict; so is one the turn removed whose directory is now a file', () => {
  const root = workspace();
  writeFileSync(join(root, 'dir'), 'a file where the directory was');
  const outcome = revertFiles({
    root,
    entries: [
      { path: 'removed-since.txt', before: file('old'), after: file('turn wrote this') },
      { path: 'dir/deleted-by-turn.txt', before: file('old'), after: null },
    ],
    contents: kept('old'),
  });
  assert.deepEqual(outcome, { ok: false, conflicts: ['removed-since.txt', 'dir/deleted-by-turn.txt'] });
});

test('checking makes nothing: a directory to be made again is made only once nothing conflicts', () => {
  const root = workspace();
  writeFileSync(join(root, 'conflict.txt'), 'edited since');
  const outcome = revertFiles({
    root,
    entries: [
      { path: 'gone/deep/file.txt', before: file('back'), after: null },
      { path: 'conflict.txt', before: file('old'), after: file('turn wrote this') },
    ],
    contents: kept('back', 'old'),
  });
  assert.deepEqual(outcome, { ok: false, conflicts: ['conflict.txt'] });
  assert.deepEqual(readdirSync(root), ['conflict.txt']);
});

test('a link whose target is not UTF-8 is compared by its bytes', () => {
  const root = workspace();
  const target = Buffer.from([0x66, 0xff, 0xfe, 0x67]);
  symlinkSync(target, join(root, 'odd-link'));
  const targetHash = createHash('sha256').update(target).digest('hex');
  const outcome = revertFiles({ root, entries: [{ path: 'odd-link', before: null, after: { type: 'l', mode: 0o777, hash: targetHash } }], contents: {} });
  assert.deepEqual(outcome, { ok: true, reverted: ['odd-link'] });
  assert.deepEqual(readdirSync(root), []);
});

test('an empty before-version needs no kept bytes', () => {
  const root = workspace();
  writeFileSync(join(root, 'emptied.txt'), 'filled by the turn');
  const outcome = revertFiles({ root, entries: [{ path: 'emptied.txt', before: file(''), after: file('filled by the turn') }], contents: {} });
  assert.deepEqual(outcome, { ok: true, reverted: ['emptied.txt'] });
  assert.equal(readFileSync(join(root, 'emptied.txt'), 'utf8'), '');
});
