import type { Db } from './database.ts';
import type { SessionsTable } from './schema.ts';

/**
 * Sessions whose rows one store keeps, as many as the model context cache keeps contexts; the
 * least recently kept go first beyond it.
 */
const MAXIMUM_ROWS = 500;

interface WriteState {
  /** writes to the row that have begun and not ended */
  inFlight: number;
  /** another write began while one was in flight: what any of them read back may be overtaken */
  contended: boolean;
}

/** What a write to a session row hands back when it ends. */
export interface SessionRowWrite {
  /** the write committed, and this is the row as it left it (read back by the write itself) */
  committed(row: SessionsTable | null): void;
  /** the write failed, or its outcome is unknown */
  failed(): void;
}

/**
 * The session rows of one store, so that a turn's submission reads its session without a query:
 * the turn before it has just written the row, and hands the row it wrote back (RETURNING) once
 * its transaction has committed.
 *
 * A row is kept only while nothing can have changed it: every write to a session row goes through
 * `writing()` (sessions.ts `writingSessionRow`), which drops the kept row when it begins and again
 * when it ends, and keeps the row it read back only when no other write to the session overlapped
 * it. A row read by a query is kept only when no write to any session ran while the query did and
 * none to this one is in flight.
 * As for the store's other caches, this process is the only writer of its database's sessions,
 * unless it is an instance of a cluster, which shares the store's rows (shareWithOtherWriters).
 * Each store (each tenant's database) has its own, and a row answers only for its own boundary.
 */
export class SessionRowCache {
  private readonly rows = new Map<string, SessionsTable>();
  private readonly writes = new Map<string, WriteState>();
  private writtenVersion = 0;
  /** other processes write these rows too (--cluster): nothing is kept, and every read is afresh */
  private shared = false;

  /**
   * Other instances of a cluster write the same rows, and this process does not see them do it:
   * from now on no row is kept and the version moves at every look, so neither this cache nor the
   * session read cache built on its version answers from memory.
   */
  shareWithOtherWriters(): void {
    this.shared = true;
    this.rows.clear();
  }

  /**
   * The version of this store's session rows, for the read cache (runtime/session/session-read-cache.ts):
   * it moves on after every write to a session row, once the statement has run and again once the
   * transaction holding it has committed (a reader on another PostgreSQL connection sees the old
   * row until then). Per store: a write in one tenant's database leaves the others' reads kept.
   */
  get version(): number {
    if (this.shared) this.writtenVersion += 1;
    return this.writtenVersion;
  }

  /** Every writer of session rows calls this after its statement and after its transaction ends. */
  noteWritten(): void {
    this.writtenVersion += 1;
  }

  /** The kept row of a session of `boundaryId`, or undefined to read it from the store. */
  row(boundaryId: string, id: string): SessionsTable | undefined {
    const row = this.rows.get(id);
    return row !== undefined && row.boundary_id === boundaryId ? row : undefined;
  }

  /** A row a query read, whose reading began at `versionBefore` of the session rows (sessions.ts). */
  keepRead(row: SessionsTable, versionBefore: number, versionNow: number): void {
    if (versionNow !== versionBefore || this.writes.has(row.id)) return;
    this.keep(row);
  }

  /** Begins a write to the session's row; end it with the answer's `committed` or `failed`. */
  writing(id: string): SessionRowWrite {
    const ongoing = this.writes.get(id);
    const state = ongoing ?? { inFlight: 0, contended: false };
    if (ongoing !== undefined) ongoing.contended = true;
    state.inFlight += 1;
    this.writes.set(id, state);
    this.rows.delete(id);
    let ended = false;
    const end = (row: SessionsTable | null): void => {
      if (ended) return;
      ended = true;
      this.rows.delete(id);
      if (row !== null && state.inFlight === 1 && !state.contended) this.keep(row);
      state.inFlight -= 1;
      if (state.inFlight === 0) this.writes.delete(id);
    };
    return { committed: (row) => end(row), failed: () => end(null) };
  }

  private keep(row: SessionsTable): void {
    if (this.shared) return;
    this.rows.delete(row.id);
    this.rows.set(row.id, row);
    if (this.rows.size > MAXIMUM_ROWS) this.rows.delete(this.rows.keys().next().value!);
  }
}

/** By the store's Kysely adapter, which its transactions share: one cache per store. */
const caches = new WeakMap<object, SessionRowCache>();

export function sessionRowCache(db: Db): SessionRowCache {
  const adapter = db.getExecutor().adapter;
  let cache = caches.get(adapter);
  if (cache === undefined) {
    cache = new SessionRowCache();
    caches.set(adapter, cache);
  }
  return cache;
}
