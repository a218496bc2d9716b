/**
 * What a directory tree looks like now, by metadata only: every file and symlink below a root
 * (lstat, never following a link), with what changes when its content, mode or identity does. Two
 * snapshots taken around a tool call say which files the call created, modified or deleted,
 * whatever wrote them (a shell command as well as apply_patch). `.git` directories are not entered:
 * a commit rewrites objects and the index, which are the repository's, not the turn's files.
 */
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import path from 'node:path';

export interface EntryState {
  /** 'f' a regular file, 'l' a symlink, 'o' anything else that is not a directory */
  type: 'f' | 'l' | 'o';
  size: number;
  mode: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  /** the sha256 of its bytes (a symlink's target), when a ContentStore keeps them (content-store.ts) */
  hash?: string;
}

export interface TreeSnapshot {
  /** relative `/`-separated path → state */
  entries: Map<string, EntryState>;
  /** the walk stopped at the entry limit: what it did not reach is unknown */
  incomplete: boolean;
}

export interface SnapshotOptions {
  /** entries walked at most (files and directories) */
  maxEntries: number;
  /** give the event loop back after this much synchronous work */
  sliceMs?: number;
  /** told of each directory (relative, with its inode) before it is read */
  onDirectory?(relative: string, ino: number): void;
}

export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set(['.git']);

export function entryStateOf(stats: Stats): EntryState {
  return {
    type: stats.isFile() ? 'f' : stats.isSymbolicLink() ? 'l' : 'o',
    size: stats.size,
    mode: stats.mode,
    ino: stats.ino,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
  };
}

export async function snapshotTree(root: string, options: SnapshotOptions): Promise<TreeSnapshot> {
  const entries = new Map<string, EntryState>();
  const sliceMs = options.sliceMs ?? 10;
  let walked = 0;
  let sliceStarted = performance.now();
  const pending: string[] = [''];
  while (pending.length > 0) {
    const relative = pending.pop()!;
    let names: string[];
    try {
      names = readdirSync(relative === '' ? root : path.join(root, relative));
    } catch {
      continue; // gone or unreadable meanwhile: what is below it is not seen
    }
    for (const name of names) {
      if (++walked > options.maxEntries) return { entries, incomplete: true };
      if (performance.now() - sliceStarted > sliceMs) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStarted = performance.now();
      }
      const child = relative === '' ? name : `${relative}/${name}`;
      let stats: Stats;
      try {
        stats = lstatSync(path.join(root, child));
      } catch {
        continue;
      }
      if (stats.isDirectory()) {
        if (SKIPPED_DIRECTORIES.has(name)) continue;
        options.onDirectory?.(child, stats.ino);
        pending.push(child);
        continue;
      }
      entries.set(child, entryStateOf(stats));
    }
  }
  return { entries, incomplete: false };
}

export function sameEntry(a: EntryState | undefined, b: EntryState | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.type === b.type && a.size === b.size && a.mode === b.mode && a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/** Every path whose state differs between the two snapshots (present in one only, or changed). */
export function changedPaths(before: TreeSnapshot, after: TreeSnapshot): string[] {
  const changed: string[] = [];
  for (const [name, state] of before.entries) if (!sameEntry(state, after.entries.get(name))) changed.push(name);
  for (const name of after.entries.keys()) if (!before.entries.has(name)) changed.push(name);
  return changed;
}
