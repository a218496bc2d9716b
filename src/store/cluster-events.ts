/**
 * The shared event stream of a cluster's boundary (CONTRACT.md §18, docs/CLUSTER.md "One event
 * stream"): events are rows numbered from the boundary's counter, and readers follow them by id.
 *
 * Why readers never miss an id: a writer takes the next ids by updating the boundary's row, which
 * locks it until the writer's transaction ends, so the writers of one boundary commit one after
 * another in the order of their ids, and a transaction that rolls back gives its ids back with its
 * update. Whatever a reader's snapshot sees is therefore every id up to some newest one, without
 * a gap: reading `id > last seen` in id order never skips an event that commits later.
 */
import { sql } from 'kysely';
import type { Db } from './database.ts';

/** An event as the publisher made it, before the cluster numbered it; `data` already JSON. */
export interface EventDraft {
  type: string;
  sessionId: string | null;
  turnId: string | null;
  at: string;
  data: string;
  /** the attempt of `turnId` its publisher held the turn at: stored only while the turn is still at it */
  attempt?: number;
}

/** A stored event, numbered: the shape of events/event-record.ts's StoredEvent. */
export interface StoredEvent {
  id: number;
  type: string;
  turnId: string | null;
  sessionId: string | null;
  at: string;
  data: unknown;
}

/** Stored events are pruned in steps of this many ids (or of the window, when smaller), not at every write. */
const PRUNE_STEP = 64;

/** Makes sure the boundary's counter row exists (a boundary that never opened has none). */
export async function ensureEventCounter(db: Db, boundaryId: string): Promise<void> {
  await db.insertInto('boundaries').values({ id: boundaryId, event_id_ceiling: 0 }).onConflict((conflict) => conflict.column('id').doNothing()).execute();
}

/**
 * Numbers and stores these events in one transaction, and drops those that left the window of the
 * newest `window` events. An event that names the attempt of its turn is fenced like the turn's
 * other writes: if the turn was taken over (another attempt), it is left out. Answers the events
 * stored, in order, and the id of the first (null when none was).
 */
export async function storeEvents(db: Db, boundaryId: string, drafts: readonly EventDraft[], window: number): Promise<{ firstId: number | null; stored: EventDraft[] }> {
  return db.transaction().execute(async (trx) => {
    const stored = await currentDrafts(trx, drafts);
    if (stored.length === 0) return { firstId: null, stored };
    return { firstId: await numberAndInsert(trx, boundaryId, stored, window), stored };
  });
}

/**
 * The drafts whose turn is still at the attempt they name (or that name none). The turns' rows are
 * read FOR SHARE: a takeover's update of one waits for this transaction, so no event of the old
 * attempt commits after the new attempt does.
 */
async function currentDrafts(trx: Db, drafts: readonly EventDraft[]): Promise<EventDraft[]> {
  const fenced = [...new Set(drafts.filter((draft) => draft.attempt !== undefined).map((draft) => draft.turnId!))];
  if (fenced.length === 0) return [...drafts];
  const rows = await trx.selectFrom('turns').select(['id', 'attempt']).where('id', 'in', fenced).forShare().execute();
  const attempts = new Map(rows.map((row) => [row.id, row.attempt]));
  return drafts.filter((draft) => draft.attempt === undefined || attempts.get(draft.turnId!) === draft.attempt);
}

async function numberAndInsert(trx: Db, boundaryId: string, drafts: readonly EventDraft[], window: number): Promise<number> {
  const { event_id_ceiling: lastId } = await trx
    .updateTable('boundaries')
    .set({ event_id_ceiling: sql`event_id_ceiling + ${drafts.length}` })
    .where('id', '=', boundaryId)
    .returning('event_id_ceiling')
    .executeTakeFirstOrThrow();
  const firstId = lastId - drafts.length + 1;
  await trx
    .insertInto('events')
    .values(drafts.map((draft, index) => ({ boundary_id: boundaryId, id: firstId + index, type: draft.type, session_id: draft.sessionId, turn_id: draft.turnId, at: draft.at, data: draft.data })))
    .execute();
  const step = Math.min(PRUNE_STEP, window);
  if (Math.floor(lastId / step) !== Math.floor((firstId - 1) / step)) {
    await trx.deleteFrom('events').where('boundary_id', '=', boundaryId).where('id', '<=', lastId - window).execute();
  }
  return firstId;
}

/** The stored events after `afterId`, oldest first, at most `limit`. */
export async function storedEventsAfter(db: Db, boundaryId: string, afterId: number, limit: number): Promise<StoredEvent[]> {
  const rows = await db.selectFrom('events').selectAll().where('boundary_id', '=', boundaryId).where('id', '>', afterId).orderBy('id').limit(limit).execute();
  return rows.map(toRecord);
}

/**
 * The boundary's newest id and the stored events of the window up to it, oldest first, read in one
 * snapshot. Events older than a gap (left by an unclustered process, which numbers in blocks of its
 * own) are not part of the window.
 */
export async function storedEventWindow(db: Db, boundaryId: string, window: number): Promise<{ newestId: number; events: StoredEvent[] }> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const row = await trx.selectFrom('boundaries').select('event_id_ceiling').where('id', '=', boundaryId).executeTakeFirstOrThrow();
      const newestId = Number(row.event_id_ceiling);
      const events = await storedEventsAfter(trx, boundaryId, newestId - window, window);
      const last = events.at(-1);
      const contiguous = last !== undefined && last.id === newestId && last.id - events[0].id === events.length - 1;
      return { newestId, events: contiguous ? events : [] };
    });
}

function toRecord(row: { id: number; type: string; turn_id: string | null; session_id: string | null; at: string; data: string }): StoredEvent {
  return { id: Number(row.id), type: row.type, turnId: row.turn_id, sessionId: row.session_id, at: row.at, data: JSON.parse(row.data) as unknown };
}
