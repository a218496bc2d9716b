import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { removeFile } from '../../src/exec/patch-files.ts';
import { closeDirectory, openParentIfPresent, UnsafePathError } from '../../src/workspace/no-follow.ts';

test('openParentIfPresent: the parent of an entry, null when the parent is gone, refused when it is a symlink', (t) => {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-no-follow-')));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  mkdirSync(path.join(top, 'real'));
  mkdirSync(path.join(top, 'elsewhere'));
  writeFileSync(path.join(top, 'elsewhere', 'victim.txt'), 'keep me');
  symlinkSync(path.join(top, 'elsewhere'), path.join(top, 'link'));

  const parent = openParentIfPresent(path.join(top, 'real', 'file.txt'));
  assert.equal(parent?.path, path.join(top, 'real'));
  closeDirectory(parent!);
  assert.equal(openParentIfPresent(path.join(top, 'missing', 'file.txt')), null);
  assert.throws(() => openParentIfPresent(path.join(top, 'link', 'victim.txt')), UnsafePathError);

  // what the callers do with it: a file under a missing directory is already gone, one under a symlink is not touched
  removeFile(path.join(top, 'missing', 'file.txt'));
  assert.throws(() => removeFile(path.join(top, 'link', 'victim.txt')), UnsafePathError);
  assert.ok(existsSync(path.join(top, 'elsewhere', 'victim.txt')));
});
