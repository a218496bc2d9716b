/**
 * The content of a watched workspace's files as of the last look, for reverting a turn
 * (CONTRACT.md §20): a turn's revert needs each changed file's bytes from before the change, and
 * a shell command gives no warning before it writes, so the bytes are kept beforehand, by hash
 * (identical files once), in memory. Bounded: a file larger than MAX_KEPT_FILE_BYTES, or beyond
 * the store's total, is known by its metadata only, and a turn that changes it cannot be reverted.
 *
 * Files are read race-free: every directory from the workspace root down is opened without
 * following a symlink, and the file itself with O_NOFOLLOW (workspace/no-follow.ts).
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, readlinkSync, readSync } from 'node:fs';
import { closeDirectory, entryPath, openChildDirectory, openDirectoryExact, openEntry, type OpenDirectory } from './no-follow.ts';
import type { EntryState } from './tree-snapshot.ts';

const MAX_KEPT_FILE_BYTES = 1024 * 1024;
export const DEFAULT_STORE_BYTES = 64 * 1024 * 1024;

export class ContentStore {
  private readonly blobs = new Map<string, { content: Buffer; refs: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes = DEFAULT_STORE_BYTES) {}

  /** Keeps the bytes (one more reference); null when they do not fit. */
  keep(content: Buffer): string | null {
    const hash = hashOf(content);
    const held = this.blobs.get(hash);
    if (held) {
      held.refs++;
      return hash;
    }
    if (this.bytes + content.length > this.maxBytes) return null;
    this.blobs.set(hash, { content, refs: 1 });
    this.bytes += content.length;
    return hash;
  }

  get(hash: string): Buffer | undefined {
    return this.blobs.get(hash)?.content;
  }

  release(hash: string | undefined): void {
    if (hash === undefined) return;
    const held = this.blobs.get(hash);
    if (!held || --held.refs > 0) return;
    this.blobs.delete(hash);
    this.bytes -= held.content.length;
  }
}

function hashOf(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/**
 * The bytes a state stands for: a regular file's content, a symlink's target; null for anything
 * else, a file over the limit, or a path that is not what the state says any more.
 */
export function readVersion(root: string, relative: string, state: EntryState, maxBytes = MAX_KEPT_FILE_BYTES): Buffer | null {
  if (state.type === 'o' || state.size > maxBytes) return null;
  const names = relative.split('/');
  const last = names.pop()!;
  let directory: OpenDirectory | null = null;
  try {
    directory = openDirectoryExact(root);
    for (const name of names) {
      const child = openChildDirectory(directory, name);
      closeDirectory(directory);
      directory = child;
    }
    if (state.type === 'l') return Buffer.from(readlinkSync(entryPath(directory, last), { encoding: 'buffer' }));
    const fd = openEntry(directory, last, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const info = fstatSync(fd);
      if (!info.isFile() || info.size > maxBytes) return null;
      const content = Buffer.alloc(info.size);
      let length = 0;
      while (length < content.length) {
        const read = readSync(fd, content, length, content.length - length, null);
        if (read === 0) break;
        length += read;
      }
      return content.subarray(0, length);
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  } finally {
    if (directory) closeDirectory(directory);
  }
}
