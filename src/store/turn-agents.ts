/**
 * The agents view of a cluster's turns (CONTRACT.md §13, §18, docs/CLUSTER.md): the owner of a turn
 * stores the view of its child agents as it changes, each write under the turn's fencing number,
 * and any instance reads it back.
 */
import { sql } from 'kysely';
import type { Db } from './database.ts';

/** Stores the view while the turn is still at `attempt`; false when it is not (taken over: nothing stored). */
export async function storeTurnAgents(db: Db, turnId: string, attempt: number, view: string): Promise<boolean> {
  const result = await db
    .insertInto('turn_agents')
    .columns(['turn_id', 'view'])
    .expression((eb) => eb.selectFrom('turns').select([sql<string>`${turnId}`.as('turn_id'), sql<string>`${view}`.as('view')]).where('id', '=', turnId).where('attempt', '=', attempt))
    .onConflict((conflict) => conflict.column('turn_id').doUpdateSet((eb) => ({ view: eb.ref('excluded.view') })))
    .executeTakeFirst();
  return result.numInsertedOrUpdatedRows !== 0n;
}

/** The stored view of the turn's child agents (JSON), or null when its owner stored none. */
export async function readTurnAgents(db: Db, turnId: string): Promise<string | null> {
  const row = await db.selectFrom('turn_agents').select('view').where('turn_id', '=', turnId).executeTakeFirst();
  return row?.view ?? null;
}
