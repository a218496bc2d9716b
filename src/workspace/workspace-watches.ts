/**
 * The watched workspaces of one boundary, one per session directory, shared by every turn whose
 * session works there and kept between turns: the first writing call of a directory pays its walk,
 * later calls only what changed. A directory no turn has used for IDLE_MS is let go, and every idle
 * one as soon as a directory is opened that the watch budget (watch-budget.ts) could not hold:
 * their host watches are worth more to a turn that runs, whose next look can then watch again.
 *
 * A call looks at the workspace through a window: changes found while a window is open belong to
 * it (to every open one when calls overlap, as two walks around each would say); changes made
 * while no call ran (an editor, another process) are settled when the next window opens and
 * belong to no call.
 */
import { WorkspaceWatch, type PathChange } from './workspace-watch.ts';
import type { EntryState } from './tree-snapshot.ts';
import { ContentStore } from './content-store.ts';
import type { WatchBudget } from './watch-budget.ts';

const IDLE_MS = 2 * 60 * 1000;

/** What one call, or several merged, changed: each path's state before the first change and after the last. */
export class ChangeWindow {
  readonly before = new Map<string, EntryState | undefined>();
  readonly after = new Map<string, EntryState | undefined>();
  /** the bytes of each kept before-state, by hash: what a revert writes back */
  readonly contents = new Map<string, Buffer>();
  truncated = false;

  add(changes: readonly PathChange[], contentOf: (hash: string) => Buffer | undefined = () => undefined): void {
    for (const change of changes) {
      if (!this.before.has(change.path)) {
        this.before.set(change.path, change.before);
        const hash = change.before?.hash;
        const content = hash === undefined ? undefined : contentOf(hash);
        if (hash !== undefined && content !== undefined) this.contents.set(hash, content);
      }
      this.after.set(change.path, change.after);
    }
  }

  merge(other: ChangeWindow): void {
    for (const [name, state] of other.before) {
      if (this.before.has(name)) continue;
      this.before.set(name, state);
      const content = state?.hash === undefined ? undefined : other.contents.get(state.hash);
      if (content !== undefined) this.contents.set(state!.hash!, content);
    }
    for (const [name, state] of other.after) this.after.set(name, state);
    this.truncated ||= other.truncated;
  }
}

export class WatchedWorkspace {
  private readonly windows = new Set<ChangeWindow>();

  constructor(private readonly watch: WorkspaceWatch) {}

  async open(): Promise<ChangeWindow> {
    await this.deliver();
    const window = new ChangeWindow();
    this.windows.add(window);
    return window;
  }

  async close(window: ChangeWindow): Promise<ChangeWindow> {
    try {
      await this.deliver();
    } finally {
      this.windows.delete(window);
    }
    return window;
  }

  private async deliver(): Promise<void> {
    const changes = await this.watch.settle();
    for (const window of this.windows) {
      window.add(changes, (hash) => this.watch.contentOf(hash));
      window.truncated ||= this.watch.truncated;
    }
    this.watch.releaseReplaced();
  }
}

interface Held {
  opening: Promise<WatchedWorkspace>;
  watch?: WorkspaceWatch;
  users: number;
  idleTimer?: NodeJS.Timeout;
}

export interface WorkspaceWatchesOptions {
  maxEntries: number;
  /** keep the files' bytes (in memory, at most this many in all) so that turns can be reverted; 0: metadata only */
  keptContentBytes?: number;
  maxWatchedDirectories?: number;
  idleMs?: number;
  /** the boundary's (tenant's) host watches, drawing on the process's */
  budget?: WatchBudget;
}

export class WorkspaceWatches {
  private readonly held = new Map<string, Held>();
  private closed = false;
  private readonly contents: ContentStore | undefined;

  constructor(private readonly options: WorkspaceWatchesOptions) {
    this.contents = options.keptContentBytes ? new ContentStore(options.keptContentBytes) : undefined;
  }

  /** The watched workspace of `root`, opened (walked) on first use; `release` when the turn ends. */
  async acquire(root: string): Promise<{ workspace: WatchedWorkspace; release(): void }> {
    if (this.closed) throw new Error('the workspace watches are closed');
    let held = this.held.get(root);
    if (!held) {
      const entry: Held = { users: 0, opening: null as unknown as Promise<WatchedWorkspace> };
      const { maxEntries, maxWatchedDirectories, budget } = this.options;
      entry.opening = WorkspaceWatch.open(root, { maxEntries, maxWatchedDirectories, budget, contents: this.contents }).then((watch) => {
        entry.watch = watch;
        if (watch.outOfBudget) this.forgetIdle();
        if (this.closed || this.held.get(root) !== entry) watch.close();
        return new WatchedWorkspace(watch);
      });
      held = entry;
      this.held.set(root, held);
    }
    held.users++;
    clearTimeout(held.idleTimer);
    const entry = held;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (--entry.users > 0) return;
      entry.idleTimer = setTimeout(() => this.forget(root, entry), this.options.idleMs ?? IDLE_MS);
      entry.idleTimer.unref();
    };
    try {
      return { workspace: await entry.opening, release };
    } catch (error) {
      release();
      this.forget(root, entry);
      throw error;
    }
  }

  close(): void {
    this.closed = true;
    for (const [root, entry] of this.held) this.forget(root, entry);
  }

  /** Lets go of every directory no turn is using now. */
  private forgetIdle(): void {
    for (const [root, entry] of this.held) if (entry.users === 0) this.forget(root, entry);
  }

  private forget(root: string, entry: Held): void {
    clearTimeout(entry.idleTimer);
    if (this.held.get(root) === entry) this.held.delete(root);
    entry.watch?.close();
  }
}
