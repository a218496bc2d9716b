/**
 * The host's file writes (apply_patch through the host executor) on checked, canonical paths, none
 * of which follows a symlink swapped in after the check: writes
 * go to a temporary file created inside the verified parent directory and renamed over the name,
 * deletes unlink the name inside the verified parent. Missing parents are created one component at
 * a time, each verified to be a real directory (workspace/no-follow.ts).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, lstatSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { closeDirectory, entryPath, makeDirectories, openEntry, openParentIfPresent, UnsafePathError, type OpenDirectory } from '../workspace/no-follow.ts';

/**
 * Writes `contents` to `file` (replacing it whole, keeping its permissions), creating missing
 * parent directories; those it made are appended to `createdDirectories`.
 */
export function writeContents(file: string, contents: string, createdDirectories: string[]): void {
  const parentPath = path.dirname(file);
  const parent = makeDirectories(nearestExistingAncestor(parentPath), parentPath, 0o777, createdDirectories);
  try {
    const name = path.basename(file);
    const mode = existingMode(parent, name);
    const temporary = `.${name}.agentd-${randomBytes(6).toString('hex')}`;
    const fd = openEntry(parent, temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
    try {
      writeFileSync(fd, contents);
      if (mode !== null) fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(entryPath(parent, temporary), entryPath(parent, name));
    } catch (error) {
      unlinkSync(entryPath(parent, temporary));
      throw error;
    }
  } finally {
    closeDirectory(parent);
  }
}

/** Removes `file`; a file already gone is fine. */
export function removeFile(file: string): void {
  const parent = openParentIfPresent(file);
  if (parent === null) return;
  try {
    unlinkSync(entryPath(parent, path.basename(file)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  } finally {
    closeDirectory(parent);
  }
}

/** The permission bits of the regular file `name` in `parent`; null when there is none. */
function existingMode(parent: OpenDirectory, name: string): number | null {
  let info;
  try {
    info = lstatSync(entryPath(parent, name));
  } catch {
    return null;
  }
  if (info.isSymbolicLink()) throw new UnsafePathError(`${path.join(parent.path, name)} became a symbolic link; refused`);
  return info.isFile() ? info.mode & 0o7777 : null;
}

/** The deepest existing directory on the way to `directory` (it is verified when opened). */
function nearestExistingAncestor(directory: string): string {
  for (let current = directory; ; current = path.dirname(current)) {
    try {
      lstatSync(current);
      return current;
    } catch {
      if (current === path.dirname(current)) return current;
    }
  }
}
