/**
 * Turn leases of a cluster (CONTRACT.md §18, docs/CLUSTER.md): the instance that admits a turn
 * holds its lease and renews it; a lease not renewed in time lets another instance take the turn
 * over, which raises its `attempt`, the fencing number every write of the turn names
 * (turns.ts updateTurn). PostgreSQL only: SQLite cannot cluster. Every time is the database's
 * clock, so the instances' clocks need not agree.
 */
import { sql } from 'kysely';
import type { Db } from './database.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';
import type { TurnRecord, TurnText } from '../domain/turn.ts';
import { insertTurn } from './turns.ts';
import type { OutboxWrite } from './webhook-outbox.ts';

/** A turn endExpiredTurns ended. */
export interface EndedTurn {
  id: string;
  sessionId: string;
  attempt: number;
  status: string;
  error: string | null;
}

/** Now on the database's clock, in epoch milliseconds. */
const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** What storing a new turn of a cluster found: stored, stored past a full queue (the caller fails it), or not stored. */
export type LeasedAdmission = 'stored' | 'stored_queue_full' | 'session_busy';

/**
 * Inserts a new turn together with its lease, held by `owner` for `leaseMs`: both or neither, and
 * only while no other turn of its session is active on any instance ('session_busy', nothing
 * stored). The check and the insert hold a transaction lock on the session, so two instances
 * admitting a turn of one session at once take turns: the second sees the first's turn. With a
 * `queueLimit`, the boundary's turns still `queued` on any instance are counted first, under a
 * transaction lock on the boundary's queue, so two admissions at once cannot both take the last
 * place; the turn is stored either way, and 'stored_queue_full' says it found no place.
 */
export async function insertLeasedTurn(db: Db, turn: TurnRecord, text: TurnText, owner: string, leaseMs: number, queueLimit: number | null = null): Promise<LeasedAdmission> {
  return db.transaction().execute(async (trx) => {
    let queueFull = false;
    if (queueLimit !== null) {
      // One-bigint advisory keys: apart from the database claim's two-integer key (database-claim.ts).
      await sql`select pg_advisory_xact_lock(hashtextextended(${`agentd queue ${turn.boundaryId}`}, 0))`.execute(trx);
      const { queued } = await trx.selectFrom('turns').select((eb) => eb.fn.countAll<number>().as('queued')).where('boundary_id', '=', turn.boundaryId).where('status', '=', 'queued').executeTakeFirstOrThrow();
      queueFull = Number(queued) >= queueLimit;
    }
    await sql`select pg_advisory_xact_lock(hashtextextended(${`agentd session ${turn.sessionId}`}, 0))`.execute(trx);
    const busy = await trx.selectFrom('turns').select('id').where('session_id', '=', turn.sessionId).where('status', 'in', [...ACTIVE_STATUSES]).limit(1).executeTakeFirst();
    if (busy) return 'session_busy';
    await insertTurn(trx, turn, text);
    await trx
      .updateTable('turns')
      .set({ lease_owner: owner, lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
      .where('id', '=', turn.id)
      .execute();
    return queueFull ? 'stored_queue_full' : 'stored';
  });
}

/** A turn of the session is queued, running or waiting, on any instance. */
export async function sessionHasActiveTurn(db: Db, sessionId: string): Promise<boolean> {
  const row = await db.selectFrom('turns').select('id').where('session_id', '=', sessionId).where('status', 'in', [...ACTIVE_STATUSES]).limit(1).executeTakeFirst();
  return row !== undefined;
}

/**
 * Extends the leases `owner` holds on these turns; answers the turns whose lease it still held
 * (at the attempt given): one missing was taken over, or has ended.
 */
export async function renewTurnLeases(db: Db, owner: string, turns: ReadonlyMap<string, number>, leaseMs: number): Promise<Set<string>> {
  if (turns.size === 0) return new Set();
  const rows = await db
    .updateTable('turns')
    .set({ lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
    .where('id', 'in', [...turns.keys()])
    .where('lease_owner', '=', owner)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .returning(['id', 'attempt'])
    .execute();
  return new Set(rows.filter((row) => turns.get(row.id) === row.attempt).map((row) => row.id));
}

/**
 * Ends the active turns whose lease ran out and that were asked to be cancelled (or only `turnId`,
 * when given), under their next attempt: cancelled, or failed `interrupted` should an unmarked one
 * be named. Answers the turns ended. `announce` gives the webhook deliveries of those turns,
 * written in the same transaction.
 */
export async function endExpiredTurns(db: Db, finishedAt: string, turnId?: string, announce?: (turns: EndedTurn[]) => OutboxWrite | null): Promise<EndedTurn[]> {
  if (!announce) return endExpired(db, finishedAt, turnId);
  return db.transaction().execute(async (trx) => {
    const ended = await endExpired(trx, finishedAt, turnId);
    await announce(ended)?.(trx);
    return ended;
  });
}

async function endExpired(db: Db, finishedAt: string, turnId: string | undefined): Promise<EndedTurn[]> {
  let query = db
    .updateTable('turns')
    .set({
      attempt: sql`attempt + 1`,
      status: sql`case when cancel_requested_at is null then 'failed' else 'cancelled' end`,
      error: sql`case when cancel_requested_at is null then 'interrupted' else null end`,
      finished_at: finishedAt,
      lease_owner: null,
      lease_expires_at: null,
    })
    .where('status', 'in', [...ACTIVE_STATUSES])
    .where('lease_expires_at', '<', databaseNowMs);
  query = turnId === undefined ? query.where('cancel_requested_at', 'is not', null) : query.where('id', '=', turnId);
  const rows = await query.returning(['id', 'session_id', 'attempt', 'status', 'error']).execute();
  return rows.map((row) => ({ id: row.id, sessionId: row.session_id, attempt: row.attempt, status: row.status, error: row.error }));
}

/** A turn an instance took over to resume it: its id and the attempt it now runs under. */
export interface TakenTurn {
  id: string;
  attempt: number;
}

/**
 * Takes over, for `owner`, the active turns whose lease ran out (none asked to be cancelled:
 * endExpiredTurns ends those): their attempt grows, the lease is `owner`'s for `leaseMs`. Of
 * instances sweeping at once each turn goes to one: the second re-reads the row the first
 * changed, and its lease has not run out.
 */
export async function takeOverExpiredTurns(db: Db, owner: string, leaseMs: number): Promise<TakenTurn[]> {
  const rows = await db
    .updateTable('turns')
    .set({ attempt: sql`attempt + 1`, lease_owner: owner, lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
    .where('status', 'in', [...ACTIVE_STATUSES])
    .where('lease_expires_at', '<', databaseNowMs)
    .where('cancel_requested_at', 'is', null)
    .returning(['id', 'attempt'])
    .execute();
  return rows.map((row) => ({ id: row.id, attempt: row.attempt }));
}

/**
 * Gives up `owner`'s leases on these turns at once (SIGTERM on an instance of a live cluster): the
 * next sweep of another instance takes them over without waiting for the leases to run out.
 */
export async function releaseTurnLeases(db: Db, owner: string, turnIds: readonly string[]): Promise<void> {
  if (turnIds.length === 0) return;
  await db
    .updateTable('turns')
    .set({ lease_expires_at: sql`${databaseNowMs} - 1` })
    .where('id', 'in', [...turnIds])
    .where('lease_owner', '=', owner)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .execute();
}

/** Marks an active turn to be cancelled by whichever instance runs it; false when it is no longer active. */
export async function requestTurnCancel(db: Db, turnId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('turns')
    .set({ cancel_requested_at: sql`coalesce(cancel_requested_at, ${at})` })
    .where('id', '=', turnId)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Of these turns, the ones another instance was asked to cancel. */
export async function cancelsRequestedAmong(db: Db, turnIds: readonly string[]): Promise<string[]> {
  if (turnIds.length === 0) return [];
  const rows = await db.selectFrom('turns').select('id').where('id', 'in', turnIds).where('cancel_requested_at', 'is not', null).execute();
  return rows.map((row) => row.id);
}
