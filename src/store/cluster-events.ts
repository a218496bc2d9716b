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
 * Numbers and stores these events, and drops those that left the window of the newest `window`
 * events. An event that names the attempt of its turn is fenced like the turn's other writes: if
 * the turn was taken over (another attempt), it is left out, before numbering. Answers the events
 * stored, in order, and the id of the first (null when none was).
 *
 * One statement, so one round trip and its own transaction: the turns' rows are read FOR SHARE (a
 * takeover's update of one waits for it, so no event of the old attempt commits after the new
 * attempt does), then the boundary's counter is raised (its row lock orders the writers, see
 * above), and the rows go in. PostgreSQL only.
 */
export async function storeEvents(db: Db, boundaryId: string, drafts: readonly EventDraft[], window: number): Promise<{ firstId: number | null; stored: EventDraft[] }> {
  const fenced = [...new Set(drafts.filter((draft) => draft.attempt !== undefined).map((draft) => draft.turnId!))];
  const column = <Value>(pick: (draft: EventDraft) => Value) => drafts.map(pick);
  const { rows } = await sql<{ last_id: number | null; kept: number[] }>`
    with drafts as (
      select * from unnest(
        ${column((draft) => draft.type)}::text[], ${column((draft) => draft.sessionId)}::text[], ${column((draft) => draft.turnId)}::text[],
        ${column((draft) => draft.at)}::text[], ${column((draft) => draft.data)}::text[], ${column((draft) => draft.attempt ?? null)}::int[]
      ) with ordinality as draft(type, session_id, turn_id, at, data, attempt, ord)
    ),
    fence as (select id, attempt from turns where id = any(${fenced}::text[]) for share),
    kept as (
      select drafts.*, row_number() over (order by ord) as position from drafts
      where attempt is null or exists (select 1 from fence where fence.id = drafts.turn_id and fence.attempt = drafts.attempt)
    ),
    counter as (
      update boundaries set event_id_ceiling = event_id_ceiling + (select count(*) from kept)
      where id = ${boundaryId} and exists (select 1 from kept)
      returning event_id_ceiling
    ),
    inserted as (
      insert into events (boundary_id, id, type, session_id, turn_id, at, data)
      select ${boundaryId}, counter.event_id_ceiling - (select count(*) from kept) + kept.position, kept.type, kept.session_id, kept.turn_id, kept.at, kept.data
      from counter cross join kept
      returning id
    )
    select (select event_id_ceiling from counter) as last_id, array(select ord::int from kept order by ord) as kept
  `.execute(db);
  const { last_id: lastId, kept } = rows[0];
  if (lastId === null) return { firstId: null, stored: [] };
  const stored = kept.map((ord) => drafts[ord - 1]);
  const firstId = lastId - stored.length + 1;
  const step = Math.min(PRUNE_STEP, window);
  if (Math.floor(lastId / step) !== Math.floor((firstId - 1) / step)) {
    await db.deleteFrom('events').where('boundary_id', '=', boundaryId).where('id', '<=', lastId - window).execute();
  }
  return { firstId, stored };
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
