/**
 * What a directory tree looks like now, by metadata only: every file and symlink below a root
 * (lstat, never following a link), with what changes when its content, mode or identity does. Two
 * snapshots taken around a tool call say which files the call created, modified or deleted,
 * whatever wrote them (a shell command as well as apply_patch). `.git` directories are not entered:
 * a commit rewrites objects and the index, which are the repository's, not the turn's files.
 *
 * The tree may be a sandbox guest's, changing while it is walked (CONTRACT.md §17): every
 * directory is opened without following a symlink and read and looked into through its descriptor
 * (workspace/no-follow.ts), so a directory swapped for a link to elsewhere is never entered; a
 * root that is not exactly the path given (a link anywhere in it) is not walked at all.
 */
import { fstatSync, lstatSync, readdirSync, type Stats } from 'node:fs';
import { closeDirectory, directoryPath, entryPath, openChildDirectory, openDirectoryExact, type OpenDirectory } from './no-follow.ts';

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
  /**
   * told of each directory before it is read: relative ('' the root), its inode, and a path that
   * names that very directory while the call lasts (its descriptor's), to watch it by
   */
  onDirectory?(relative: string, ino: number, openedPath: string): void;
}

/** deeper than this the walk stops (incomplete) rather than hold a descriptor per level */
const MAX_DEPTH = 256;

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

  // Depth first, holding open only the directories from the root to the one being read.
  const visit = async (directory: OpenDirectory, relative: string, depth: number): Promise<boolean> => {
    options.onDirectory?.(relative, fstatSync(directory.fd).ino, directoryPath(directory));
    let names: string[];
    try {
      names = readdirSync(directoryPath(directory));
    } catch {
      return true; // unreadable: what is below it is not seen
    }
    for (const name of names) {
      if (++walked > options.maxEntries) return false;
      if (performance.now() - sliceStarted > sliceMs) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStarted = performance.now();
      }
      const child = relative === '' ? name : `${relative}/${name}`;
      let stats: Stats;
      try {
        stats = lstatSync(entryPath(directory, name));
      } catch {
        continue; // gone meanwhile
      }
      if (!stats.isDirectory()) {
        entries.set(child, entryStateOf(stats));
        continue;
      }
      if (SKIPPED_DIRECTORIES.has(name)) continue;
      if (depth >= MAX_DEPTH) return false;
      let opened: OpenDirectory;
      try {
        opened = openChildDirectory(directory, name);
      } catch {
        continue; // gone, or swapped for a symlink since the lstat: not entered
      }
      try {
        if (!(await visit(opened, child, depth + 1))) return false;
      } finally {
        closeDirectory(opened);
      }
    }
    return true;
  };

  let top: OpenDirectory;
  try {
    top = openDirectoryExact(root);
  } catch {
    return { entries, incomplete: true };
  }
  try {
    return { entries, incomplete: !(await visit(top, '', 0)) };
  } finally {
    closeDirectory(top);
  }
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
