/**
 * Race-free file access for paths that were checked first. Checking a path and then opening it by
 * name again leaves a window in which a symlink can be swapped in; so instead:
 *
 * - a checked path (absolute, symlink-free, from paths.ts) is opened once, with O_NOFOLLOW, and the
 *   descriptor's own path (`/proc/self/fd/N`) must still be exactly that path;
 * - everything below an opened directory is reached through `/proc/self/fd/N/<name>`, which the
 *   kernel resolves from the open directory itself, as openat(2) would: renaming or replacing the
 *   directory's path afterwards changes nothing, and O_NOFOLLOW guards the final name.
 *
 * Without /proc (not Linux), entries are opened by their full path and then verified the same way,
 * through fstat and realpath (`pathByStat`).
 */
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { isInside, isSymlink, PathError } from './paths.ts';

const DESCRIPTORS = '/proc/self/fd';
let hasDescriptorPaths = existsSync(DESCRIPTORS);
/** O_PATH: a directory handle for lookups only, which needs no read permission; Linux only. */
// Stryker disable next-line ConditionalExpression: `true` is this branch on Linux, where the tests run (its `false` twin, killed by the fdinfo test, shares the line)
const O_PATH = process.platform === 'linux' ? 0o10000000 : constants.O_RDONLY;
const { O_DIRECTORY, O_NOFOLLOW } = constants;

/** A directory held open, with the path it had when it was verified. */
export interface OpenDirectory {
  fd: number;
  path: string;
}

/** The error for a path that is, or became, a symlink (or otherwise not what was checked). */
export class UnsafePathError extends PathError {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafePathError';
  }
}

/**
 * Opens the checked absolute path `expected` without following a final symlink, and refuses the
 * descriptor unless it is that path (an earlier component may have been swapped meanwhile).
 * Errors other than a symlink (ENOENT, EISDIR, …) are thrown as they are.
 */
export function openExact(expected: string, flags: number, mode?: number): number {
  const fd = openNoFollow(expected, flags, mode);
  if (descriptorPath(fd, expected) !== expected) {
    closeSync(fd);
    throw new UnsafePathError(`${expected} changed while it was opened (a symbolic link in its path); refused`);
  }
  return fd;
}

/** Opens a checked directory for lookups below it; see openExact. */
export function openDirectoryExact(expected: string): OpenDirectory {
  return { fd: openExact(expected, O_PATH | O_DIRECTORY), path: expected };
}

/** The directory holding `entry`, opened as openDirectoryExact does; null when it does not exist (nothing below it to remove). */
export function openParentIfPresent(entry: string): OpenDirectory | null {
  try {
    return openDirectoryExact(path.dirname(entry));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** A path that names the open directory itself, for readdir and the like. */
export function directoryPath(directory: OpenDirectory): string {
  return hasDescriptorPaths ? `${DESCRIPTORS}/${directory.fd}` : directory.path;
}

/** The path that names `name` inside `directory`, resolved from the open directory itself. */
export function entryPath(directory: OpenDirectory, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new UnsafePathError(`not a plain file name: ${JSON.stringify(name)}`);
  }
  return hasDescriptorPaths ? `${DESCRIPTORS}/${directory.fd}/${name}` : path.join(directory.path, name);
}

/** Opens the entry `name` of `directory`, never following a symlink there. */
export function openEntry(directory: OpenDirectory, name: string, flags: number, mode?: number): number {
  const fd = openNoFollow(entryPath(directory, name), flags, mode);
  if (!hasDescriptorPaths && descriptorPath(fd, path.join(directory.path, name)) !== path.join(directory.path, name)) {
    closeSync(fd);
    throw new UnsafePathError(`${path.join(directory.path, name)} changed while it was opened; refused`);
  }
  return fd;
}

/** Opens the subdirectory `name` of `directory`; a symlink there is refused. */
export function openChildDirectory(directory: OpenDirectory, name: string): OpenDirectory {
  return { fd: openEntry(directory, name, O_PATH | O_DIRECTORY), path: path.join(directory.path, name) };
}

export function closeDirectory(directory: OpenDirectory): void {
  closeSync(directory.fd);
}

/**
 * Opens the directory `target`, creating the components below `base` that do not exist yet (with
 * `mode`; each one made is added to `created`). `base` must be an existing checked directory and
 * `target` lie inside it; every component from `base` down must be a real directory, never a symlink.
 */
// Stryker disable next-line ArrayDeclaration: the default list is read by no one (every caller that reads what was made passes its own)
export function makeDirectories(base: string, target: string, mode = 0o777, created: string[] = []): OpenDirectory {
  if (!isInside(target, base)) throw new UnsafePathError(`${target} is not inside ${base}`);
  const relative = path.relative(base, target);
  let current = openDirectoryExact(base);
  try {
    for (const name of relative.split(path.sep).filter(Boolean)) {
      try {
        mkdirSync(entryPath(current, name), { mode });
        created.push(path.join(current.path, name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const child = openChildDirectory(current, name);
      closeDirectory(current);
      current = child;
    }
    return current;
  } catch (error) {
    closeDirectory(current);
    throw error;
  }
}

function openNoFollow(file: string, flags: number, mode?: number): number {
  try {
    return openSync(file, flags | O_NOFOLLOW, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // a final symlink: ELOOP, or with O_PATH | O_DIRECTORY the symlink's own inode, which is no directory (ENOTDIR)
    if (code === 'ELOOP' || (code === 'ENOTDIR' && isSymlink(file))) {
      throw new UnsafePathError(`${displayName(file)} is a symbolic link; refused`);
    }
    throw error;
  }
}

/**
 * Makes the rest of this process behave as on a system without /proc/self/fd, so that the tests of
 * that branch run on Linux too; nothing else calls it.
 */
export function forgetDescriptorPaths(): void {
  hasDescriptorPaths = false;
}

/** The real path of an open descriptor; without /proc, see pathByStat. */
function descriptorPath(fd: number, expected: string): string | null {
  return hasDescriptorPaths ? readlinkSync(`${DESCRIPTORS}/${fd}`) : pathByStat(fd, expected);
}

/** The real path of `expected` when fstat agrees that the descriptor is that file (same device and inode), else null. */
export function pathByStat(fd: number, expected: string): string | null {
  try {
    const real = realpathSync.native(expected);
    const [opened, named] = [fstatSync(fd), statSync(real)];
    return opened.dev === named.dev && opened.ino === named.ino ? real : null;
  } catch {
    return null;
  }
}

/** The name of an entry without the /proc prefix, for messages. */
function displayName(file: string): string {
  return file.startsWith(`${DESCRIPTORS}/`) ? path.basename(file) : file;
}
