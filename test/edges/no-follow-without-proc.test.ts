// The branch of workspace/no-follow.ts for systems without /proc/self/fd, run here on Linux: this
// file's process forgets /proc before anything opens, so entries are opened by their full path and
// every descriptor is verified through realpath and fstat (pathByStat) instead of readlink.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants, openSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  closeDirectory,
  directoryPath,
  entryPath,
  forgetDescriptorPaths,
  makeDirectories,
  openChildDirectory,
  openDirectoryExact,
  openEntry,
  openExact,
  pathByStat,
  UnsafePathError,
} from '../../src/workspace/no-follow.ts';
import { noFollowWorlds, readAndClose } from './support/no-follow-world.ts';

forgetDescriptorPaths();

const { world } = noFollowWorlds('agentd-edges-noproc-');
const read = readAndClose;

/** The kernel's list of this process's descriptors: still readable, only no-follow.ts no longer uses it. */
const openDescriptors = () => readdirSync('/proc/self/fd').length;

const refusal = (action: () => unknown) => {
  try {
    action();
  } catch (error) {
    assert.ok(error instanceof UnsafePathError, String(error));
    return error.message;
  }
  assert.fail('not refused');
};

test('without /proc, a directory and its entries are named by their full paths', () => {
  const { inside } = world('names');
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    assert.equal(directoryPath(directory), path.join(inside, 'real'));
    assert.equal(entryPath(directory, 'file.txt'), path.join(inside, 'real', 'file.txt'));
    assert.throws(() => entryPath(directory, '../file.txt'), UnsafePathError, 'still only a plain name');
  } finally {
    closeDirectory(directory);
  }
});

test('without /proc, openExact opens the checked path and refuses a symlink last, earlier, or a path that is not the real one', () => {
  const { inside } = world('exact');
  const before = openDescriptors();
  assert.equal(read(openExact(path.join(inside, 'real', 'file.txt'), constants.O_RDONLY)), 'workspace');
  const last = path.join(inside, 'real', 'file-link.txt');
  assert.equal(refusal(() => openExact(last, constants.O_RDONLY)), `${last} is a symbolic link; refused`);
  for (const earlier of [path.join(inside, 'link-out', 'file.txt'), path.join(inside, 'link-in', 'file.txt'), `${inside}/real/../real/file.txt`]) {
    assert.equal(refusal(() => openExact(earlier, constants.O_RDONLY)), `${earlier} changed while it was opened (a symbolic link in its path); refused`);
  }
  closeDirectory(openDirectoryExact(path.join(inside, 'real')));
  assert.equal(refusal(() => openDirectoryExact(path.join(inside, 'link-in'))), `${path.join(inside, 'link-in')} is a symbolic link; refused`);
  assert.equal(openDescriptors(), before, 'every refused descriptor was closed');
});

test('without /proc, an entry is opened by its full path and refused when that path no longer leads into the opened directory', () => {
  const { inside, base } = world('swap');
  const before = openDescriptors();
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    assert.equal(read(openEntry(directory, 'file.txt', constants.O_RDONLY)), 'workspace');
    const link = path.join(inside, 'real', 'file-link.txt');
    assert.equal(refusal(() => openEntry(directory, 'file-link.txt', constants.O_RDONLY)), `${link} is a symbolic link; refused`, 'named by its full path');
    // the attacker's move: the checked directory is renamed away and a symlink to outside takes its
    // name; without /proc the full path leads outside, and the check after the open notices
    renameSync(path.join(inside, 'real'), path.join(inside, 'moved'));
    symlinkSync(path.join(base, 'outside'), path.join(inside, 'real'));
    const swapped = path.join(inside, 'real', 'file.txt');
    assert.equal(refusal(() => openEntry(directory, 'file.txt', constants.O_RDONLY)), `${swapped} changed while it was opened; refused`);
  } finally {
    closeDirectory(directory);
  }
  assert.equal(openDescriptors(), before, 'the descriptor of the refused entry was closed');
});

test('without /proc, makeDirectories makes and opens each missing component by its full path', () => {
  const { inside } = world('make');
  const made: string[] = [];
  const opened = makeDirectories(inside, path.join(inside, 'a', 'b'), 0o700, made);
  try {
    assert.equal(opened.path, path.join(inside, 'a', 'b'));
    assert.equal(directoryPath(opened), path.join(inside, 'a', 'b'));
  } finally {
    closeDirectory(opened);
  }
  assert.deepEqual(made, [path.join(inside, 'a'), path.join(inside, 'a', 'b')]);
  assert.equal(statSync(path.join(inside, 'a', 'b')).mode & 0o777, 0o700);
  const parent = openDirectoryExact(inside);
  const child = openChildDirectory(parent, 'a');
  assert.equal(child.path, path.join(inside, 'a'));
  closeDirectory(child);
  closeDirectory(parent);
  assert.throws(() => makeDirectories(inside, path.join(inside, 'link-out', 'x')), UnsafePathError);
  assert.throws(() => readFileSync(path.join(inside, '..', 'outside', 'x')), /ENOENT/, 'nothing was made outside');
});

test('pathByStat: the real path when the descriptor is that file, null when another file or nothing has the name now', () => {
  const { inside } = world('stat');
  const file = path.join(inside, 'real', 'file.txt');
  const fd = openSync(file, constants.O_RDONLY);
  try {
    assert.equal(pathByStat(fd, file), file);
    assert.equal(pathByStat(fd, path.join(inside, 'link-in', 'file.txt')), file, 'the real path, for the caller to compare with what it checked');
    // a race lost between the open and the check: the name now holds another file on the same device
    renameSync(file, path.join(inside, 'real', 'old.txt'));
    writeFileSync(file, 'replacement');
    assert.equal(pathByStat(fd, file), null);
    unlinkSync(file);
    assert.equal(pathByStat(fd, file), null, 'the name is gone');
  } finally {
    closeSync(fd);
  }
});

test('pathByStat: the same inode number on another device is another file', () => {
  // filesystem roots often share an inode number (1 for proc, sysfs, tmpfs …): find two mount points
  // in this process's mount table that do, on different devices
  const mountPoints = [...new Set(readFileSync('/proc/self/mounts', 'utf8').trim().split('\n').map((line) => line.split(' ')[1]))];
  const seen = new Map<number, { point: string; dev: number }>();
  let pair: [string, string] | undefined;
  for (const point of mountPoints) {
    let stat;
    try {
      stat = statSync(point);
    } catch {
      continue;
    }
    const earlier = seen.get(stat.ino);
    if (earlier && earlier.dev !== stat.dev && realpathSync(point) === point && realpathSync(earlier.point) === earlier.point) {
      pair = [earlier.point, point];
      break;
    }
    if (!earlier) seen.set(stat.ino, { point, dev: stat.dev });
  }
  assert.ok(pair, 'two mount points with the same inode number on different devices');
  const [opened, named] = pair;
  const fd = openSync(opened, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    assert.equal(pathByStat(fd, opened), opened);
    assert.equal(pathByStat(fd, named), null);
  } finally {
    closeSync(fd);
  }
});
