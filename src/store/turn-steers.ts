/**
 * Steers of a cluster's turns (CONTRACT.md §18–§19, docs/CLUSTER.md "Steer from any instance"):
 * the instance that takes a steer stores it as a row naming the session's active turn; the turn's
 * owner claims it under the turn's attempt (the fence), gives it to the turn or refuses it (the turn
 * decided to end) and says which. A row is pending, claimed, then steered or refused:
 * - only an owner at the turn's current attempt claims (a claim of an earlier attempt, whose owner
 *   is gone, may be claimed again);
 * - a pending steer is withdrawn (to become a turn of its own) only once its turn has ended, in
 *   one statement, so a steer is never both given to the turn and made a turn of its own.
 */
import { sql } from 'kysely';
import type { Db } from './database.ts';
import { turnAtAttempt } from './turn-fence.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';
import { decodeStoredText, encodeStoredText } from './text-codec.ts';
import type { CanonicalItem } from '../domain/canonical-item.ts';

export interface NewSteer {
  id: string;
  sessionId: string;
  turnId: string;
  clientRequestId: string | null;
  inputDigest: string;
  input: string;
  item: CanonicalItem;
  createdAt: string;
}

type SteerStatus = 'pending' | 'claimed' | 'steered' | 'refused';

export interface StoredSteer {
  id: string;
  turnId: string;
  inputDigest: string;
  status: SteerStatus;
}

/** A steer an owner is to give to its turn. */
export interface SteerToDeliver {
  id: string;
  turnId: string;
  sessionId: string;
  input: string;
  item: CanonicalItem;
}

/** Stores a pending steer; false when its clientRequestId was taken already (a retry raced it). */
export async function insertSteer(db: Db, steer: NewSteer): Promise<boolean> {
  const result = await db
    .insertInto('turn_steers')
    .values({
      id: steer.id, session_id: steer.sessionId, turn_id: steer.turnId, client_request_id: steer.clientRequestId, input_digest: steer.inputDigest,
      input: encodeStoredText(steer.input), item: JSON.stringify(steer.item), created_at: steer.createdAt, status: 'pending', claimed_attempt: null,
    })
    .onConflict((conflict) => conflict.columns(['session_id', 'client_request_id']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function findSteer(db: Db, id: string): Promise<StoredSteer | null> {
  const row = await db.selectFrom('turn_steers').select(['id', 'turn_id', 'input_digest', 'status']).where('id', '=', id).executeTakeFirst();
  return row ? { id: row.id, turnId: row.turn_id, inputDigest: row.input_digest, status: row.status as SteerStatus } : null;
}

export async function findSteerByClientRequestId(db: Db, sessionId: string, clientRequestId: string): Promise<StoredSteer | null> {
  const row = await db.selectFrom('turn_steers').select(['id', 'turn_id', 'input_digest', 'status']).where('session_id', '=', sessionId).where('client_request_id', '=', clientRequestId).executeTakeFirst();
  return row ? { id: row.id, turnId: row.turn_id, inputDigest: row.input_digest, status: row.status as SteerStatus } : null;
}

/**
 * The steers waiting for these turns, which the caller holds at the attempts given: pending ones,
 * and claims of an earlier attempt (their claimer lost the turn before it said what became of them).
 */
export async function steersWaitingFor(db: Db, turns: ReadonlyMap<string, number>): Promise<SteerToDeliver[]> {
  if (turns.size === 0) return [];
  const rows = await db
    .selectFrom('turn_steers')
    .innerJoin('turns', 'turns.id', 'turn_steers.turn_id')
    .select(['turn_steers.id', 'turn_steers.turn_id', 'turn_steers.session_id', 'turn_steers.input', 'turn_steers.item', 'turns.attempt'])
    .where('turn_steers.turn_id', 'in', [...turns.keys()])
    .where((eb) => eb.or([eb('turn_steers.status', '=', 'pending'), eb.and([eb('turn_steers.status', '=', 'claimed'), eb('turn_steers.claimed_attempt', '<', eb.ref('turns.attempt'))])]))
    .orderBy('turn_steers.created_at')
    .orderBy('turn_steers.id')
    .execute();
  return rows
    .filter((row) => turns.get(row.turn_id) === row.attempt)
    .map((row) => ({ id: row.id, turnId: row.turn_id, sessionId: row.session_id, input: decodeStoredText(row.input), item: JSON.parse(row.item) as CanonicalItem }));
}

/**
 * The owner of the turn at `attempt` claims the steer, while the turn is active at that attempt;
 * false when it is not (another instance took the turn over, or it ended), or the steer was
 * claimed or decided already.
 */
export async function claimSteer(db: Db, id: string, turnId: string, attempt: number): Promise<boolean> {
  const result = await db
    .updateTable('turn_steers')
    .set({ status: 'claimed', claimed_attempt: attempt })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('status', '=', 'pending'), eb.and([eb('status', '=', 'claimed'), eb('claimed_attempt', '<', attempt)])]))
    .where((eb) => turnAtAttempt(eb, { turnId, attempt, active: true }))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** What the claimer did with the steer; its text is no longer needed. */
export async function decideSteer(db: Db, id: string, attempt: number, status: 'steered' | 'refused'): Promise<void> {
  await db.updateTable('turn_steers').set({ status, input: '', item: '' }).where('id', '=', id).where('status', '=', 'claimed').where('claimed_attempt', '=', attempt).execute();
}

/**
 * Gives up a steer nobody will decide, once its turn has ended: still pending (nobody claimed it in
 * time), or claimed at an attempt before the turn's last (its claimer lost the turn before saying).
 * True when it did; the row is deleted, and the input becomes a turn of its own, which holds the
 * clientRequestId from then on.
 */
export async function withdrawSteerOfEndedTurn(db: Db, id: string, turnId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('turn_steers')
    .where('id', '=', id)
    .where((eb) => eb.or([eb('status', '=', 'pending'), eb.and([eb('status', '=', 'claimed'), eb('claimed_attempt', '<', eb.selectFrom('turns').select('attempt').where('turns.id', '=', turnId))])]))
    .where((eb) => eb.not(eb.exists(eb.selectFrom('turns').select(sql`1`.as('one')).where('turns.id', '=', turnId).where('turns.status', 'in', [...ACTIVE_STATUSES]))))
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** A refused steer becomes a turn of its own, which holds its clientRequestId from then on. */
export async function deleteSteer(db: Db, id: string): Promise<void> {
  await db.deleteFrom('turn_steers').where('id', '=', id).execute();
}

/** The session's active turn on any instance, if any. */
export async function activeTurnIdOf(db: Db, sessionId: string): Promise<string | null> {
  const row = await db.selectFrom('turns').select('id').where('session_id', '=', sessionId).where('status', 'in', [...ACTIVE_STATUSES]).limit(1).executeTakeFirst();
  return row?.id ?? null;
}

/** A deleted session's steers (joins the caller's transaction). */
export async function forgetSessionSteers(db: Db, sessionId: string): Promise<void> {
  await db.deleteFrom('turn_steers').where('session_id', '=', sessionId).execute();
}
