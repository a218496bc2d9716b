/**
 * The fence of a cluster's turns (CONTRACT.md §18, docs/CLUSTER.md "Fenced turn ownership"): a
 * write on behalf of a turn counts only while the turn is still at the attempt its writer holds.
 * Every per-turn write of the store is made here, in one of two shapes, with one failure: a write
 * the fence refuses stores nothing and throws StaleTurnWrite (the runtime's TurnClaimLost), and its
 * writer lets go of the turn.
 * test/store/turn-fence.test.ts refuses a stale attempt's write of each, and fails when a table
 * keyed by a turn is written anywhere else. The database's clock and the store's transaction
 * locks are defined here too, once.
 */
import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import type { Db } from './database.ts';
import type { Database } from './schema.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';

/**
 * A write of a turn under an attempt that is no longer the turn's: another instance took the
 * turn over, or it ended. Nothing of the write was stored; its writer must let go of the turn.
 */
export class StaleTurnWrite extends Error {
  constructor(readonly turnId: string, readonly attempt: number) {
    super(`turn ${turnId} is no longer at attempt ${attempt}: another instance took it over`);
    this.name = 'StaleTurnWrite';
  }
}

/** Who writes: the turn, the attempt its writer holds, and whether the turn must still be active. */
export interface FenceKey {
  turnId: string;
  attempt: number;
  /** the write counts only while the turn is queued, running or waiting (not after its end) */
  active?: boolean;
}

/** Now on the database's clock, in epoch milliseconds: every lease time of a cluster is this clock's. */
export const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/**
 * Takes the transaction-scoped advisory lock named `name` (one-bigint keys, apart from the database
 * claim's two-integer key in database-claim.ts); it is let go at the transaction's end.
 */
export async function transactionLock(trx: Db, name: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(trx);
}

type PerTurnTable = Exclude<keyof Database, 'turns'>;

/**
 * Inserts (or, with `upsertOn`, replaces) one row of a per-turn table, selected from the turn's row
 * at the key's attempt: nothing is written when the turn is at another attempt (StaleTurnWrite).
 */
export async function fencedInsert<Table extends PerTurnTable>(db: Db, table: Table, key: FenceKey, values: Record<string, unknown>, upsertOn?: string): Promise<void> {
  const columns = Object.keys(values);
  let insert = db
    .insertInto(table)
    .columns(columns as never)
    .expression((eb) => fenceOf(eb.selectFrom('turns').select(columns.map((column) => sql`${values[column]}`.as(column)) as never), key) as never);
  if (upsertOn !== undefined) {
    insert = insert.onConflict((conflict) => conflict.column(upsertOn as never).doUpdateSet(Object.fromEntries(columns.filter((column) => column !== upsertOn).map((column) => [column, sql.ref(`excluded.${column}`)])) as never));
  }
  requireWritten((await insert.executeTakeFirst()).numInsertedOrUpdatedRows, key);
}

/** The count of rows a fenced write changed: none means the fence refused it (StaleTurnWrite). */
export function requireWritten(changed: bigint | undefined, key: FenceKey): void {
  if (!changed) throw new StaleTurnWrite(key.turnId, key.attempt);
}

/** `exists (the turn at the key's attempt)`: for an update of a per-turn row, whose own row names the turn. */
export function turnAtAttempt(eb: ExpressionBuilder<Database, PerTurnTable>, key: FenceKey) {
  return eb.exists(fenceOf(eb.selectFrom('turns').select(sql`1`.as('one')), key));
}

function fenceOf<Output>(query: SelectQueryBuilder<Database, 'turns', Output>, key: FenceKey): SelectQueryBuilder<Database, 'turns', Output> {
  const fenced = query.where('turns.id', '=', key.turnId).where('turns.attempt', '=', key.attempt);
  return key.active ? fenced.where('turns.status', 'in', [...ACTIVE_STATUSES]) : fenced;
}
