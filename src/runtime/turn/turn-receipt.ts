/**
 * A turn's change receipt (CONTRACT.md §20): each tool call that may write, whichever agent of the
 * turn makes it, runs inside a window on the session directory's watched workspace
 * (workspace/workspace-watches.ts), and every file a call created, modified or deleted is kept
 * with its state before the turn first touched it. At the end, a file back in that state (created
 * then deleted) is not listed. Calls may overlap (child agents): each path keeps its first
 * before-state and its latest after-state, so the receipt holds whatever order they end in.
 */
import { MAX_FILE_CHANGES, type FileChange, type FileChanges } from '../../domain/file-changes.ts';
import { sameEntry } from '../../workspace/tree-snapshot.ts';
import { ChangeWindow, type WatchedWorkspace, type WorkspaceWatches } from '../../workspace/workspace-watches.ts';

/** Beyond this many entries under the cwd the walk stops and the receipt says it is truncated. */
export const MAX_WATCHED_ENTRIES = 100_000;

export class TurnReceipt {
  private readonly seen = new ChangeWindow();
  private held: Promise<{ workspace: WatchedWorkspace; release(): void }> | null = null;

  constructor(
    private readonly watches: WorkspaceWatches,
    private readonly cwd: string,
  ) {}

  /** Runs a call that may write, noting what it changed (also when it throws). */
  async around<T>(call: () => Promise<T>): Promise<T> {
    const { workspace } = await (this.held ??= this.watches.acquire(this.cwd));
    const window = await workspace.open();
    try {
      return await call();
    } finally {
      this.seen.merge(await workspace.close(window));
    }
  }

  /** The turn is over: its workspace may be let go once no other turn uses it. */
  async release(): Promise<void> {
    const held = this.held;
    this.held = null;
    if (held) (await held.catch(() => null))?.release();
  }

  changes(): FileChanges {
    const changes: FileChange[] = [];
    for (const [name, was] of this.seen.before) {
      const now = this.seen.after.get(name);
      if (sameEntry(was, now)) continue;
      if (now === undefined) changes.push({ path: name, kind: 'deleted', bytes: 0 });
      else changes.push({ path: name, kind: was === undefined ? 'created' : 'modified', bytes: now.size });
    }
    changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { changes: changes.slice(0, MAX_FILE_CHANGES), changesTruncated: this.seen.truncated || changes.length > MAX_FILE_CHANGES };
  }
}
