/**
 * A turn's change receipt (CONTRACT.md §20): each tool call that may write, whichever agent of the
 * turn makes it, runs inside a window on the session directory's watched workspace
 * (workspace/workspace-watches.ts), and every file a call created, modified or deleted is kept
 * with its state before the turn first touched it. At the end, a file back in that state (created
 * then deleted) is not listed. Calls may overlap (child agents): each path keeps its first
 * before-state and its latest after-state, so the receipt holds whatever order they end in.
 */
import { MAX_FILE_CHANGES, type FileChange, type FileChanges } from '../../domain/file-changes.ts';
import { sameEntry, type EntryState } from '../../workspace/tree-snapshot.ts';
import { MAX_REVERT_BYTES_PER_TURN, type FileVersion, type RevertEntry, type TurnRevertPlan } from '../../domain/turn-revert.ts';
import { ChangeWindow, type WatchedWorkspace, type WorkspaceWatches } from '../../workspace/workspace-watches.ts';

/** Beyond this many entries under the cwd the walk stops and the receipt says it is truncated. */
export const MAX_WATCHED_ENTRIES = 100_000;

export class TurnReceipt {
  private readonly seen = new ChangeWindow();
  private held: Promise<{ workspace: WatchedWorkspace; release(): void }> | null = null;
  /** a call that may write ran (the receipt watched at least once) */
  watchedAnyCall = false;

  constructor(
    private readonly watches: WorkspaceWatches,
    private readonly cwd: string,
  ) {}

  /** Runs a call that may write, noting what it changed (also when it throws). */
  async around<T>(call: () => Promise<T>): Promise<T> {
    this.watchedAnyCall = true;
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

  /**
   * What reverting the turn takes: every changed file's version before and after the turn, with the
   * before-bytes; unavailable when one of them was not kept (larger than the store keeps, neither a
   * regular file nor a symlink), the receipt is cut, or the before-bytes exceed the per-turn cap.
   */
  revertPlan(maxBytes = MAX_REVERT_BYTES_PER_TURN): TurnRevertPlan {
    if (this.seen.truncated) return { available: false, reason: 'the turn changed more files than a receipt lists' };
    const entries: RevertEntry[] = [];
    const contents = new Map<string, Buffer>();
    let bytes = 0;
    for (const [name, was] of this.seen.before) {
      const now = this.seen.after.get(name);
      if (sameEntry(was, now)) continue;
      const before = versionOf(was);
      const after = versionOf(now);
      if (before === undefined || after === undefined) return { available: false, reason: `${name} was not kept (larger than 1 MiB, not a regular file or symlink, or beyond the server's store)` };
      if (before) {
        const content = this.seen.contents.get(before.hash);
        if (content === undefined) return { available: false, reason: `the earlier content of ${name} was not kept` };
        if (!contents.has(before.hash)) bytes += content.length;
        contents.set(before.hash, content);
      }
      entries.push({ path: name, before, after });
    }
    if (bytes > maxBytes) return { available: false, reason: `the turn's earlier contents take ${bytes} bytes, more than the ${maxBytes} kept per turn` };
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { available: true, entries, contents };
  }

  /**
   * --cluster: the receipt as it stands, for the turn's step of tool results (store/turn-steps.ts),
   * so that an instance taking the turn over goes on from it (`continueFrom`); undefined while no
   * call that may write has run. Files' states only: the before-bytes stay in this process.
   */
  snapshot(): string | undefined {
    if (!this.watchedAnyCall) return undefined;
    const states = (map: Map<string, EntryState | undefined>) => [...map].map(([name, state]) => [name, state ?? null]);
    return JSON.stringify({ before: states(this.seen.before), after: states(this.seen.after), truncated: this.seen.truncated });
  }

  /**
   * A turn taken over: what its former owners' calls changed comes first. Their before-bytes were
   * not kept here, so a revert of a file they changed is unavailable rather than partial.
   */
  continueFrom(snapshot: string): void {
    const { before, after, truncated } = JSON.parse(snapshot) as { before: [string, EntryState | null][]; after: [string, EntryState | null][]; truncated: boolean };
    for (const [name, state] of before) if (!this.seen.before.has(name)) this.seen.before.set(name, state ?? undefined);
    for (const [name, state] of after) this.seen.after.set(name, state ?? undefined);
    this.seen.truncated ||= truncated;
    this.watchedAnyCall = true;
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

/** null: absent; undefined: present but its bytes are not known. */
function versionOf(state: EntryState | undefined): FileVersion | null | undefined {
  if (state === undefined) return null;
  if (state.type === 'o' || state.hash === undefined) return undefined;
  return { type: state.type, mode: state.mode & 0o7777, hash: state.hash };
}
