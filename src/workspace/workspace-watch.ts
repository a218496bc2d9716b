/**
 * What changed under a directory tree since it was last looked at, without walking it again: the
 * tree is walked once (metadata only, see tree-snapshot.ts), then every directory is watched
 * (inotify through fs.watch, one watch per directory) and only the names the kernel reports are
 * looked at again. `settle()` brings the known states up to date and says which paths changed.
 *
 * Anything the watch cannot vouch for makes the next settle walk the whole tree and compare, as
 * the receipt did before: a watch that fails or cannot be added, more directories than
 * MAX_WATCHED_DIRECTORIES or than the tenant's or the process's watch budget has left
 * (watch-budget.ts; the watches taken are then given back), or so many events since the last settle that the kernel's queue may
 * have overflowed (fs.watch does not report an overflow).
 */
import { lstatSync, readFileSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { closeDirectory, entryPath, openDirectoryExact, type OpenDirectory } from './no-follow.ts';
import path from 'node:path';
import { changedPaths, entryStateOf, snapshotTree, SKIPPED_DIRECTORIES, type EntryState, type TreeSnapshot } from './tree-snapshot.ts';
import { readVersion, type ContentStore } from './content-store.ts';
import type { WatchBudget } from './watch-budget.ts';

/** One path whose state differs from the last settle; undefined: absent. */
export interface PathChange {
  path: string;
  before: EntryState | undefined;
  after: EntryState | undefined;
}

export interface WorkspaceWatchOptions {
  /** entries walked at most; a larger tree is marked incomplete */
  maxEntries: number;
  /** directories watched at most; beyond, every settle walks */
  maxWatchedDirectories?: number;
  /** keeps each file's bytes as of the last look (for revert); metadata only without it */
  contents?: ContentStore;
  /** the tenant's (and through it the process's) host watches; past it every settle walks */
  budget?: WatchBudget;
}

const MAX_WATCHED_DIRECTORIES = 4096;

/** Half the kernel's queue: a settle that saw this many events may have missed some. */
const OVERFLOW_SUSPECTED_AT = Math.floor(readQueueLength() / 2);

function readQueueLength(): number {
  try {
    return Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim()) || 16_384;
  } catch {
    return 16_384;
  }
}

/** Events already queued by the kernel are read in the loop's next poll phase; two turns of the loop pass it. */
const eventsDelivered = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

export class WorkspaceWatch {
  private states = new Map<string, EntryState>();
  /** watched directories (relative, '' the root) with their inode, so a replaced one is noticed */
  private readonly directories = new Map<string, { ino: number; watcher: FSWatcher | null }>();
  private dirty = new Set<string>();
  private events = 0;
  private watching = true;
  private walkNeeded = false;
  private incomplete = false;
  private rootIno = -1;
  private settling: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly maxWatched: number;
  /** directories met by the last walk (watched or not): what watching the whole tree would take */
  private directoriesSeen = 0;
  private budgetRefused = false;
  /** hashes of versions replaced since the last takeReleased(): still readable until released */
  private released: string[] = [];

  private constructor(
    readonly root: string,
    private readonly options: WorkspaceWatchOptions,
  ) {
    this.maxWatched = options.maxWatchedDirectories ?? MAX_WATCHED_DIRECTORIES;
  }

  /** Walks the tree once and starts watching it. */
  static async open(root: string, options: WorkspaceWatchOptions): Promise<WorkspaceWatch> {
    const watch = new WorkspaceWatch(root, options);
    await watch.rewalk();
    return watch;
  }

  /** true while the watch vouches for the tree (no walk on settle) */
  get watched(): boolean {
    return this.watching && !this.walkNeeded;
  }

  /** The last walk wanted more watches than the budget had left (it walks until there is room). */
  get outOfBudget(): boolean {
    return this.budgetRefused;
  }

  /** The tree was larger than the entry limit: what lies beyond it is unknown. */
  get truncated(): boolean {
    return this.incomplete;
  }

  /** The state of a path as of the last settle. */
  stateOf(relative: string): EntryState | undefined {
    return this.states.get(relative);
  }

  /** Brings the states up to date: the paths that changed since the previous settle, one settle at a time. */
  settle(): Promise<PathChange[]> {
    const next = this.settling.then(() => this.settleNow());
    this.settling = next.catch(() => {});
    return next;
  }

  close(): void {
    this.closed = true;
    this.stopWatching();
    for (const state of this.states.values()) this.released.push(...(state.hash ? [state.hash] : []));
    this.releaseReplaced();
  }

  /** The bytes of a version this watch keeps (until releaseReplaced lets a replaced one go). */
  contentOf(hash: string): Buffer | undefined {
    return this.options.contents?.get(hash);
  }

  /** Lets the content store drop the versions replaced so far (once whoever needed them has taken them). */
  releaseReplaced(): void {
    const released = this.released;
    this.released = [];
    for (const hash of released) this.options.contents?.release(hash);
  }

  /** A new state for a path, with its bytes kept when a content store is given (unchanged metadata: the same bytes). */
  private withVersion(name: string, state: EntryState, previous: EntryState | undefined): EntryState {
    const contents = this.options.contents;
    if (!contents) return state;
    if (previous?.hash !== undefined && sameState(previous, state)) {
      contents.keep(contents.get(previous.hash)!);
      return { ...state, hash: previous.hash };
    }
    const bytes = readVersion(this.root, name, state);
    const hash = bytes === null ? null : contents.keep(bytes);
    return hash === null ? state : { ...state, hash };
  }

  private async settleNow(): Promise<PathChange[]> {
    await eventsDelivered();
    if (this.closed) return [];
    if (!this.watched || this.events >= OVERFLOW_SUSPECTED_AT || this.rootReplaced()) return this.rewalk();
    const batch = this.dirty;
    this.dirty = new Set();
    this.events = 0;
    const changes = new Map<string, PathChange>();
    const note = (name: string, seen: EntryState | undefined) => {
      const current = this.states.get(name);
      const before = changes.has(name) ? changes.get(name)!.before : current;
      const after = seen === undefined ? undefined : this.withVersion(name, seen, current);
      if (current?.hash) this.released.push(current.hash);
      if (after === undefined) this.states.delete(name);
      else this.states.set(name, after);
      changes.set(name, { path: name, before, after });
    };
    for (const name of batch) {
      if (this.underSkipped(name)) continue;
      const stats = lstatOrNull(path.join(this.root, name));
      const watchedDirectory = this.directories.get(name);
      if (watchedDirectory && !(stats?.isDirectory() && stats.ino === watchedDirectory.ino)) this.forgetDirectory(name, note);
      if (stats?.isDirectory()) {
        if (!this.directories.has(name) && !SKIPPED_DIRECTORIES.has(path.basename(name))) await this.adoptDirectory(name, note);
        if (this.states.has(name)) note(name, undefined);
        continue;
      }
      note(name, stats ? entryStateOf(stats) : undefined);
    }
    if (!this.watched) return this.rewalk();
    return [...changes.values()].filter((change) => !sameState(change.before, change.after));
  }

  /** The whole tree walked again and compared: the fallback, and the first look. */
  private async rewalk(): Promise<PathChange[]> {
    this.stopWatching();
    // A tree the budget could not hold last time is only watched again once there is room for all of it.
    this.budgetRefused = this.directoriesSeen > (this.options.budget?.free ?? Infinity);
    this.watching = this.directoriesSeen <= this.maxWatched && !this.budgetRefused;
    this.directoriesSeen = 0;
    this.walkNeeded = false;
    this.dirty = new Set();
    this.events = 0;
    this.rootIno = lstatOrNull(this.root)?.ino ?? -1;
    // Each directory is watched before it is read: a change made during the walk is then reported again, never lost.
    const snapshot = await snapshotTree(this.root, { maxEntries: this.options.maxEntries, onDirectory: (relative, ino, openedPath) => this.watchDirectory(relative, ino, openedPath) });
    if (snapshot.incomplete) this.walkNeeded = true;
    this.incomplete = snapshot.incomplete;
    const previous: TreeSnapshot = { entries: this.states, incomplete: false };
    let sliceStarted = performance.now();
    for (const [name, state] of snapshot.entries) {
      snapshot.entries.set(name, this.withVersion(name, state, this.states.get(name)));
      if (performance.now() - sliceStarted > 10) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStarted = performance.now();
      }
    }
    for (const state of this.states.values()) if (state.hash) this.released.push(state.hash);
    const changes = changedPaths(previous, snapshot).map((name) => ({ path: name, before: this.states.get(name), after: snapshot.entries.get(name) }));
    this.states = snapshot.entries;
    if (!this.watching) this.stopWatching();
    return changes;
  }

  /** A directory that appeared (or replaced another): its whole subtree is new, and watched from now on. */
  private async adoptDirectory(relative: string, note: (name: string, after: EntryState | undefined) => void): Promise<void> {
    const stats = lstatOrNull(path.join(this.root, relative));
    if (!stats?.isDirectory()) return;
    const below = await snapshotTree(path.join(this.root, relative), {
      maxEntries: this.options.maxEntries,
      onDirectory: (inner, ino, openedPath) => this.watchDirectory(inner === '' ? relative : `${relative}/${inner}`, ino, openedPath),
    });
    if (below.incomplete || this.states.size + below.entries.size > this.options.maxEntries) this.walkNeeded = true;
    for (const [name, state] of below.entries) note(`${relative}/${name}`, state);
  }

  /** A directory that went away (or was replaced): every state below it is gone. */
  private forgetDirectory(relative: string, note: (name: string, after: EntryState | undefined) => void): void {
    const prefix = `${relative}/`;
    for (const [name, directory] of this.directories) {
      if (name !== relative && !name.startsWith(prefix)) continue;
      this.unwatch(directory);
      this.directories.delete(name);
    }
    for (const name of [...this.states.keys()]) if (name.startsWith(prefix)) note(name, undefined);
  }

  /** `openedPath` names the very directory that was checked (its descriptor's path), so a link swapped in since is not what gets watched. */
  private watchDirectory(relative: string, ino: number, openedPath: string): void {
    this.directoriesSeen++;
    if (!this.watching) return;
    if (this.directories.size >= this.maxWatched) {
      this.watching = false;
      return;
    }
    if (!(this.options.budget?.take() ?? true)) {
      this.watching = false;
      this.budgetRefused = true;
      return;
    }
    try {
      const watcher = watch(openedPath, { persistent: false }, (_type, name) => {
        this.events++;
        if (name === null) this.walkNeeded = true;
        else this.dirty.add(relative === '' ? String(name) : `${relative}/${String(name)}`);
      });
      watcher.on('error', () => (this.walkNeeded = true));
      const replaced = this.directories.get(relative);
      if (replaced) this.unwatch(replaced);
      this.directories.set(relative, { ino, watcher });
    } catch {
      this.options.budget?.give();
      this.watching = false; // no inotify, or out of watches: every settle walks
    }
  }

  private stopWatching(): void {
    for (const directory of this.directories.values()) this.unwatch(directory);
    this.directories.clear();
  }

  /** Closes a directory's watch and gives it back to the budget. */
  private unwatch(directory: { watcher: FSWatcher | null }): void {
    if (directory.watcher === null) return;
    directory.watcher.close();
    directory.watcher = null;
    this.options.budget?.give();
  }

  private rootReplaced(): boolean {
    return (lstatOrNull(this.root)?.ino ?? -1) !== this.rootIno;
  }

  private underSkipped(relative: string): boolean {
    return relative.split('/').some((part) => SKIPPED_DIRECTORIES.has(part));
  }
}

/** The entry's own state, looked up from its parent opened without following a link (null when gone or reached through one). */
function lstatOrNull(file: string): Stats | null {
  let parent: OpenDirectory;
  try {
    parent = openDirectoryExact(path.dirname(file));
  } catch {
    return null;
  }
  try {
    return lstatSync(entryPath(parent, path.basename(file)));
  } catch {
    return null;
  } finally {
    closeDirectory(parent);
  }
}

function sameState(a: EntryState | undefined, b: EntryState | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.type === b.type && a.size === b.size && a.mode === b.mode && a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}
