import type { Db } from './database.ts';

/** The durable event id ceiling of a boundary: null before the boundary first opened. */
export async function readEventIdCeiling(db: Db, boundaryId: string): Promise<number | null> {
  const row = await db.selectFrom('boundaries').select('event_id_ceiling').where('id', '=', boundaryId).executeTakeFirst();
  return row ? Number(row.event_id_ceiling) : null;
}

/** Raises the ceiling; `exists` says whether the boundary's row was already written. */
export async function writeEventIdCeiling(db: Db, boundaryId: string, ceiling: number, exists: boolean): Promise<void> {
  if (exists) await db.updateTable('boundaries').set({ event_id_ceiling: ceiling }).where('id', '=', boundaryId).execute();
  else await db.insertInto('boundaries').values({ id: boundaryId, event_id_ceiling: ceiling }).execute();
}
