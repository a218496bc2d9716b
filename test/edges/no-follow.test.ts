// Near misses of race-free file access (workspace/no-follow.ts), made deterministic: the state a
// racing attacker would have to win is built directly (a symlink already in an earlier component,
// a directory already swapped after it was opened), so a loosened check fails every run, not most.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import {
  closeDirectory,
  directoryPath,
  entryPath,
  makeDirectories,
  openChildDirectory,
  openDirectoryExact,
  openEntry,
  openExact,
  UnsafePathError,
} from '../../src/workspace/no-follow.ts';
import { noFollowWorlds, readAndClose } from './support/no-follow-world.ts';

const { root, world } = noFollowWorlds('agentd-edges-nofollow-');
const read = readAndClose;

test('openExact: the checked path itself opens; a symlink as its last or as an earlier component is refused', () => {
  const { inside } = world('exact');
  assert.equal(read(openExact(path.join(inside, 'real', 'file.txt'), constants.O_RDONLY)), 'workspace');
  assert.throws(() => openExact(path.join(inside, 'real', 'file-link.txt'), constants.O_RDONLY), UnsafePathError, 'final symlink');
  // O_NOFOLLOW guards only the last name: the re-check after open is what refuses these
  assert.throws(() => openExact(path.join(inside, 'link-out', 'file.txt'), constants.O_RDONLY), UnsafePathError, 'earlier symlink leading out');
  assert.throws(() => openExact(path.join(inside, 'link-in', 'file.txt'), constants.O_RDONLY), UnsafePathError, 'earlier symlink staying inside');
  assert.throws(() => openExact(`${inside}/real/../real/file.txt`, constants.O_RDONLY), UnsafePathError, 'a path that is not the canonical one');
});

test('openDirectoryExact: the directory opens, a symlink to a directory (last or earlier) is refused', () => {
  const { inside } = world('directory');
  closeDirectory(openDirectoryExact(path.join(inside, 'real')));
  assert.throws(() => openDirectoryExact(path.join(inside, 'link-out')), UnsafePathError);
  assert.throws(() => openDirectoryExact(path.join(inside, 'link-in')), UnsafePathError);
  mkdirSync(path.join(inside, 'real', 'sub'));
  assert.throws(() => openDirectoryExact(path.join(inside, 'link-in', 'sub')), UnsafePathError);
});

test('entryPath: a plain name passes, and only a plain name', () => {
  const { inside } = world('names');
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    for (const name of ['', '.', '..', 'a/b', '/', 'a\0b', '../file.txt', 'real/']) assert.throws(() => entryPath(directory, name), UnsafePathError, JSON.stringify(name));
    for (const name of ['...', '.hidden', '..x', 'x..', ' ', 'file.txt', 'a\\b', '\u2215slash-lookalike']) assert.doesNotThrow(() => entryPath(directory, name), JSON.stringify(name));
  } finally {
    closeDirectory(directory);
  }
});

test('openEntry: a symlink entry is refused; a directory swapped for a symlink after it was opened still leads to the original', () => {
  const { inside, base } = world('swap');
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    assert.throws(() => openEntry(directory, 'file-link.txt', constants.O_RDONLY), UnsafePathError);
    // the attacker's move: the checked directory is renamed away and a symlink to outside takes its name
    renameSync(path.join(inside, 'real'), path.join(inside, 'moved'));
    symlinkSync(path.join(base, 'outside'), path.join(inside, 'real'));
    assert.equal(read(openEntry(directory, 'file.txt', constants.O_RDONLY)), 'workspace');
  } finally {
    closeDirectory(directory);
  }
  assert.throws(() => openDirectoryExact(path.join(inside, 'real')), UnsafePathError, 'the swapped name itself is refused');
});

test('makeDirectories: inside the base only, prefix look-alikes and symlinked components refused', () => {
  const { inside, base } = world('make');
  const made: string[] = [];
  closeDirectory(makeDirectories(inside, path.join(inside, 'a', 'b'), 0o755, made));
  assert.deepEqual(made, [path.join(inside, 'a'), path.join(inside, 'a', 'b')]);
  closeDirectory(makeDirectories(inside, inside));
  assert.throws(() => makeDirectories(inside, `${inside}-sibling`), UnsafePathError, 'a sibling whose name starts like the base');
  assert.throws(() => makeDirectories(inside, path.join(base, 'outside', 'x')), UnsafePathError);
  assert.throws(() => makeDirectories(inside, path.join(inside, 'link-out', 'x')), UnsafePathError);
  assert.throws(() => makeDirectories(path.join(inside, 'link-in'), path.join(inside, 'link-in', 'x')), UnsafePathError, 'a symlinked base');
  assert.throws(() => readFileSync(path.join(base, 'outside', 'x')), /ENOENT/, 'nothing was made outside');
});

const openDescriptors = () => readdirSync('/proc/self/fd').length;

test('each refusal says what it refused, and leaves no descriptor open', () => {
  const { inside, base } = world('messages');
  const before = openDescriptors();
  const refusal = (action: () => unknown) => {
    try {
      action();
    } catch (error) {
      assert.ok(error instanceof UnsafePathError, String(error));
      assert.equal(error.name, 'UnsafePathError');
      return error.message;
    }
    assert.fail('not refused');
  };
  const earlier = path.join(inside, 'link-out', 'file.txt');
  assert.equal(refusal(() => openExact(earlier, constants.O_RDONLY)), `${earlier} changed while it was opened (a symbolic link in its path); refused`);
  const last = path.join(inside, 'real', 'file-link.txt');
  assert.equal(refusal(() => openExact(last, constants.O_RDONLY)), `${last} is a symbolic link; refused`);
  assert.equal(refusal(() => openDirectoryExact(path.join(inside, 'link-in'))), `${path.join(inside, 'link-in')} is a symbolic link; refused`);
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    assert.equal(refusal(() => openEntry(directory, 'file-link.txt', constants.O_RDONLY)), 'file-link.txt is a symbolic link; refused', 'named without the /proc prefix');
    assert.equal(refusal(() => entryPath(directory, 'a/b')), 'not a plain file name: "a/b"');
    symlinkSync(path.join(base, 'outside'), path.join(inside, 'real', 'dir-link'));
    assert.equal(refusal(() => openChildDirectory(directory, 'dir-link')), 'dir-link is a symbolic link; refused');
    assert.equal(refusal(() => openChildDirectory(directory, 'file-link.txt')), 'file-link.txt is a symbolic link; refused', 'a symlink to a file opened as a directory');
    assert.throws(() => openChildDirectory(directory, 'file.txt'), (error: NodeJS.ErrnoException) => error.code === 'ENOTDIR' && !(error instanceof UnsafePathError), 'a plain file is no directory, and no attack');
    assert.throws(() => openEntry(directory, 'missing', constants.O_RDONLY), (error: NodeJS.ErrnoException) => error.code === 'ENOENT' && !(error instanceof UnsafePathError));
  } finally {
    closeDirectory(directory);
  }
  assert.equal(refusal(() => makeDirectories(inside, `${inside}-sibling`)), `${inside}-sibling is not inside ${inside}`);
  refusal(() => makeDirectories(inside, path.join(inside, 'link-out', 'x')));
  assert.throws(() => makeDirectories(inside, path.join(inside, 'real', 'file.txt', 'x')), (error: NodeJS.ErrnoException) => error.code === 'ENOTDIR');
  assert.equal(openDescriptors(), before, 'every descriptor opened on the way was closed');
});

test('an opened directory is named by its descriptor, and its entries through it', () => {
  const { inside } = world('descriptor');
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    assert.deepEqual(directory, { fd: directory.fd, path: path.join(inside, 'real') });
    assert.equal(directoryPath(directory), `/proc/self/fd/${directory.fd}`);
    assert.equal(entryPath(directory, 'file.txt'), `/proc/self/fd/${directory.fd}/file.txt`);
    mkdirSync(path.join(inside, 'real', 'sub'));
    const child = openChildDirectory(directory, 'sub');
    assert.equal(child.path, path.join(inside, 'real', 'sub'));
    closeDirectory(child);
  } finally {
    closeDirectory(directory);
  }
});

test('makeDirectories: a name starting with two dots is inside; existing components are not reported as made; the mode is applied', () => {
  const { inside } = world('dots');
  const made: string[] = [];
  const opened = makeDirectories(inside, path.join(inside, '..x', 'y'), 0o700, made);
  assert.equal(opened.path, path.join(inside, '..x', 'y'));
  closeDirectory(opened);
  assert.deepEqual(made, [path.join(inside, '..x'), path.join(inside, '..x', 'y')]);
  assert.equal(statSync(path.join(inside, '..x', 'y')).mode & 0o777, 0o700);
  const again: string[] = [];
  closeDirectory(makeDirectories(inside, path.join(inside, '..x', 'y', 'z'), 0o755, again));
  assert.deepEqual(again, [path.join(inside, '..x', 'y', 'z')], 'only the component that was missing');
  assert.throws(() => makeDirectories(inside, path.join(inside, '..')), UnsafePathError);
  assert.throws(() => makeDirectories(inside, path.join(inside, '..', 'outside')), UnsafePathError);
});

test('a directory that cannot be made is reported with the mkdir\'s own error, not the open after it', () => {
  // sysfs refuses mkdir to everyone (EPERM, or EROFS where it is mounted read-only): a directory root cannot write
  const name = '/sys/agentd-edges-probe';
  let direct: string | undefined;
  try {
    mkdirSync(name);
    rmSync(name, { recursive: true });
  } catch (error) {
    direct = (error as NodeJS.ErrnoException).code;
  }
  assert.ok(direct !== undefined && direct !== 'ENOENT' && direct !== 'EEXIST', `mkdir under /sys was refused: ${direct}`);
  assert.throws(() => makeDirectories('/sys', name), (error: NodeJS.ErrnoException) => error.code === direct);
});

test('a path through a plain file is an ordinary ENOTDIR, even opened as a directory', () => {
  const { inside } = world('through-file');
  assert.throws(() => openDirectoryExact(path.join(inside, 'real', 'file.txt', 'x')), (error: NodeJS.ErrnoException) => error.code === 'ENOTDIR' && !(error instanceof UnsafePathError));
  assert.throws(() => openDirectoryExact(path.join(inside, 'real', 'file.txt')), (error: NodeJS.ErrnoException) => error.code === 'ENOTDIR' && !(error instanceof UnsafePathError));
});

test('a directory is held by an O_PATH handle, which needs no read permission', () => {
  const { inside } = world('o-path');
  const O_PATH = 0o10000000; // Linux's value; the kernel reports a descriptor's open flags in octal in fdinfo
  const flagsOf = (fd: number) => Number.parseInt(/^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1], 8);
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    assert.equal(flagsOf(directory.fd) & O_PATH, O_PATH);
    const file = openEntry(directory, 'file.txt', constants.O_RDONLY);
    assert.equal(flagsOf(file) & O_PATH, 0, 'what is read is opened for reading');
    closeSync(file);
  } finally {
    closeDirectory(directory);
  }
});

test('creating a file where a symlink stands is an ordinary EEXIST, and the symlink is not followed', () => {
  const { inside, base } = world('exclusive');
  const directory = openDirectoryExact(path.join(inside, 'real'));
  try {
    const exclusive = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
    assert.throws(() => openEntry(directory, 'file-link.txt', exclusive, 0o600), (error: NodeJS.ErrnoException) => error.code === 'EEXIST' && !(error instanceof UnsafePathError));
    assert.throws(() => openExact(path.join(inside, 'real', 'file-link.txt'), exclusive, 0o600), (error: NodeJS.ErrnoException) => error.code === 'EEXIST' && !(error instanceof UnsafePathError));
  } finally {
    closeDirectory(directory);
  }
  assert.equal(readFileSync(path.join(base, 'outside', 'file.txt'), 'utf8'), 'secret');
});
