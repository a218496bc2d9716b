import { sql } from 'kysely';
import type { Db } from './database.ts';

/**
 * Reserves the next `block` event ids of a boundary in one statement and returns the new ceiling:
 * ids up to it may be handed out. The first reservation of a boundary writes its row (ceiling
 * `block`); a later one raises the stored ceiling by `block`.
 */
export async function reserveEventIds(db: Db, boundaryId: string, block: number): Promise<number> {
  const row = await db
    .insertInto('boundaries')
    .values({ id: boundaryId, event_id_ceiling: block })
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ event_id_ceiling: sql<number>`boundaries.event_id_ceiling + ${block}` }))
    .returning('event_id_ceiling')
    .executeTakeFirstOrThrow();
  return Number(row.event_id_ceiling);
}

/** Raises the ceiling of a boundary whose row exists. */
export async function writeEventIdCeiling(db: Db, boundaryId: string, ceiling: number): Promise<void> {
  await db.updateTable('boundaries').set({ event_id_ceiling: ceiling }).where('id', '=', boundaryId).execute();
}
