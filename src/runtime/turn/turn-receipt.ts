/**
 * A turn's change receipt (CONTRACT.md §20): the session cwd is looked at (metadata only, see
 * workspace/tree-snapshot.ts) before and after each tool call that may write, whichever agent of
 * the turn makes it, and every file a call created, modified or deleted is kept with its state
 * before the turn first touched it. At the end, a file back in that state (created then deleted)
 * is not listed. Calls may overlap (child agents): each path keeps its first before-state and its
 * latest after-state, so the receipt holds whatever order they end in.
 */
import { MAX_FILE_CHANGES, type FileChange, type FileChanges } from '../../domain/file-changes.ts';
import { changedPaths, sameEntry, snapshotTree, type EntryState } from '../../workspace/tree-snapshot.ts';

/** Beyond this many entries under the cwd the walk stops and the receipt says it is truncated. */
export const MAX_WATCHED_ENTRIES = 100_000;

export class TurnReceipt {
  private readonly before = new Map<string, EntryState | undefined>();
  private readonly after = new Map<string, EntryState | undefined>();
  private incomplete = false;

  constructor(
    private readonly cwd: string,
    private readonly maxEntries = MAX_WATCHED_ENTRIES,
  ) {}

  /** Runs a call that may write, noting what it changed (also when it throws). */
  async around<T>(call: () => Promise<T>): Promise<T> {
    const first = await snapshotTree(this.cwd, { maxEntries: this.maxEntries });
    try {
      return await call();
    } finally {
      const second = await snapshotTree(this.cwd, { maxEntries: this.maxEntries });
      this.incomplete ||= first.incomplete || second.incomplete;
      for (const name of changedPaths(first, second)) {
        if (!this.before.has(name)) this.before.set(name, first.entries.get(name));
        this.after.set(name, second.entries.get(name));
      }
    }
  }

  changes(): FileChanges {
    const changes: FileChange[] = [];
    for (const [name, was] of this.before) {
      const now = this.after.get(name);
      if (sameEntry(was, now)) continue;
      if (now === undefined) changes.push({ path: name, kind: 'deleted', bytes: 0 });
      else changes.push({ path: name, kind: was === undefined ? 'created' : 'modified', bytes: now.size });
    }
    changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { changes: changes.slice(0, MAX_FILE_CHANGES), changesTruncated: this.incomplete || changes.length > MAX_FILE_CHANGES };
  }
}
