import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
