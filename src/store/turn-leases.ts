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

/** Now on the database's clock, in epoch milliseconds. */
const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/**
 * Inserts a new turn together with its lease, held by `owner` for `leaseMs`: both or neither, and
 * only while no other turn of its session is active on any instance (false, nothing stored). The
 * check and the insert hold a transaction lock on the session, so two instances admitting a turn
 * of one session at once take turns: the second sees the first's turn.
 */
export async function insertLeasedTurn(db: Db, turn: TurnRecord, text: TurnText, owner: string, leaseMs: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    // A one-bigint advisory key: apart from the database claim's two-integer key (database-claim.ts).
    await sql`select pg_advisory_xact_lock(hashtextextended(${`agentd session ${turn.sessionId}`}, 0))`.execute(trx);
    const busy = await trx.selectFrom('turns').select('id').where('session_id', '=', turn.sessionId).where('status', 'in', [...ACTIVE_STATUSES]).limit(1).executeTakeFirst();
    if (busy) return false;
    await insertTurn(trx, turn, text);
    await trx
      .updateTable('turns')
      .set({ lease_owner: owner, lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
      .where('id', '=', turn.id)
      .execute();
    return true;
  });
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
 * Takes over the active turns whose lease ran out (or only `turnId`, when given) and, as far as
 * takeover goes today, ends them under their next attempt, as a restart does: cancelled when a
 * cancel was asked for, else failed `interrupted` (resuming them is not built yet: docs/CLUSTER.md).
 * Answers the turns ended.
 */
export async function endExpiredTurns(db: Db, finishedAt: string, turnId?: string): Promise<{ id: string; sessionId: string; attempt: number; status: string }[]> {
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
  if (turnId !== undefined) query = query.where('id', '=', turnId);
  const rows = await query.returning(['id', 'session_id', 'attempt', 'status']).execute();
  return rows.map((row) => ({ id: row.id, sessionId: row.session_id, attempt: row.attempt, status: row.status }));
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
