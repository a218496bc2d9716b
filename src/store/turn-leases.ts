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

/** Inserts a new turn together with its lease, held by `owner` for `leaseMs`: both or neither. */
export async function insertLeasedTurn(db: Db, turn: TurnRecord, text: TurnText, owner: string, leaseMs: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await insertTurn(trx, turn, text);
    await trx
      .updateTable('turns')
      .set({ lease_owner: owner, lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
      .where('id', '=', turn.id)
      .execute();
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
 * Takes over the active turns whose lease ran out and, as far as takeover goes today, ends them
 * as failed `interrupted` under their next attempt, as a restart does (resuming them is not built
 * yet: docs/CLUSTER.md). Answers the turns ended.
 */
export async function endExpiredTurns(db: Db, finishedAt: string): Promise<{ id: string; sessionId: string; attempt: number }[]> {
  const rows = await db
    .updateTable('turns')
    .set({ attempt: sql`attempt + 1`, status: 'failed', error: 'interrupted', finished_at: finishedAt, lease_owner: null, lease_expires_at: null })
    .where('status', 'in', [...ACTIVE_STATUSES])
    .where('lease_expires_at', '<', databaseNowMs)
    .returning(['id', 'session_id', 'attempt'])
    .execute();
  return rows.map((row) => ({ id: row.id, sessionId: row.session_id, attempt: row.attempt }));
}
