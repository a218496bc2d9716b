/**
 * The agents view of a cluster's turns (CONTRACT.md §13, §18, docs/CLUSTER.md): the owner of a turn
 * stores the view of its child agents as it changes, each write under the turn's attempt (the fence),
 * and any instance reads it back.
 */
import type { Db } from './database.ts';
import { fencedInsert } from './turn-fence.ts';

/** Stores the view while the turn is still at `attempt` (else StaleTurnWrite: taken over, nothing stored). */
export async function storeTurnAgents(db: Db, turnId: string, attempt: number, view: string): Promise<void> {
  await fencedInsert(db, 'turn_agents', { turnId, attempt }, { turn_id: turnId, view }, 'turn_id');
}

/** The stored view of the turn's child agents (JSON), or null when its owner stored none. */
export async function readTurnAgents(db: Db, turnId: string): Promise<string | null> {
  const row = await db.selectFrom('turn_agents').select('view').where('turn_id', '=', turnId).executeTakeFirst();
  return row?.view ?? null;
}
