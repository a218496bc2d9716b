/**
 * What reverting a turn needs, kept per turn (CONTRACT.md §20, migration 0009_turn_reverts): its
 * entries and status, and the before-bytes once per hash, shared by every turn that needs them.
 * Only turns that ran a writing call have a row, and only the latest `keep` of them per session
 * (--revert-history); older ones and the bytes no kept turn needs any more are deleted as each new
 * row is stored. The bytes are stored as bytes (migration 0014), and the boundary's (tenant's) kept
 * bytes are bounded (--revert-bytes-per-tenant, CONTRACT.md §21): past the bound the oldest
 * turns' bytes are dropped first, in the transaction that stored the new ones, and those turns are
 * unavailable from then on.
 */
import { inTransaction, type Db } from './database.ts';
import type { RevertEntry, TurnRevertPlan } from '../domain/turn-revert.ts';

export type StoredRevert =
  | { status: 'available' | 'reverted'; sessionId: string; entries: RevertEntry[] }
  | { status: 'unavailable'; sessionId: string; reason: string };

export interface TurnRevertKey {
  boundaryId: string;
  sessionId: string;
  turnId: string;
  createdAt: string;
}

/** How much revert content one boundary keeps: what --revert-history and --revert-bytes-per-tenant allow. */
export interface RevertBounds {
  /** the latest turns of a session that keep their revert */
  turnsPerSession: number;
  /** the boundary's kept bytes at most */
  bytes: number;
}

/**
 * Stores a finished turn's revert, then lets go of the session's turns beyond the latest
 * `turnsPerSession` and of the boundary's oldest turns' bytes beyond `bytes`; one transaction.
 */
export async function storeTurnRevert(db: Db, key: TurnRevertKey, plan: TurnRevertPlan, bounds: RevertBounds): Promise<void> {
  const keep = bounds.turnsPerSession;
  await db.transaction().execute(async (trx) => {
    const entries = plan.available ? plan.entries : [];
    await trx
      .insertInto('turn_reverts')
      .values({ turn_id: key.turnId, boundary_id: key.boundaryId, session_id: key.sessionId, created_at: key.createdAt, status: plan.available ? 'available' : 'unavailable', reason: plan.available ? null : plan.reason, entries: JSON.stringify(entries) })
      .execute();
    if (plan.available) {
      for (const [hash, content] of plan.contents) {
        await trx.insertInto('revert_contents').values({ hash, size: content.length, content }).onConflict((conflict) => conflict.column('hash').doNothing()).execute();
        await trx.insertInto('turn_revert_contents').values({ turn_id: key.turnId, hash }).execute();
      }
    }
    const older = await trx
      .selectFrom('turn_reverts')
      .select('turn_id')
      .where('session_id', '=', key.sessionId)
      .orderBy('created_at', 'desc')
      .orderBy('turn_id', 'desc')
      .offset(keep)
      .limit(1_000_000)
      .execute();
    await forgetTurns(trx, older.map((row) => row.turn_id));
    await dropOldestBeyond(trx, key.boundaryId, bounds.bytes);
  });
}

/** The bytes a boundary's kept turns hold: each content once, however many turns share it. */
export async function revertBytesKept(db: Db, boundaryId: string): Promise<number> {
  const usedByBoundary = db
    .selectFrom('turn_revert_contents')
    .innerJoin('turn_reverts', 'turn_reverts.turn_id', 'turn_revert_contents.turn_id')
    .select('turn_revert_contents.hash')
    .where('turn_reverts.boundary_id', '=', boundaryId);
  const row = await db.selectFrom('revert_contents').select((eb) => eb.fn.sum<number | string | null>('size').as('total')).where('hash', 'in', usedByBoundary).executeTakeFirst();
  return Number(row?.total ?? 0);
}

/** Past `maxBytes`, the boundary's oldest available turns give up their bytes (and become unavailable) until the rest fits. */
async function dropOldestBeyond(db: Db, boundaryId: string, maxBytes: number): Promise<void> {
  let kept = await revertBytesKept(db, boundaryId);
  if (kept <= maxBytes) return;
  const oldestFirst = await db
    .selectFrom('turn_reverts')
    .select('turn_id')
    .where('boundary_id', '=', boundaryId)
    .where('status', '=', 'available')
    .orderBy('created_at', 'asc')
    .orderBy('turn_id', 'asc')
    .execute();
  const reason = `its earlier file contents were dropped to keep the tenant's revert content within --revert-bytes-per-tenant (${maxBytes} bytes); the oldest turns give theirs up first`;
  for (const { turn_id: turnId } of oldestFirst) {
    if (kept <= maxBytes) return;
    await dropContentsOf(db, [turnId]);
    await db.updateTable('turn_reverts').set({ status: 'unavailable', reason, entries: '[]' }).where('turn_id', '=', turnId).execute();
    kept = await revertBytesKept(db, boundaryId);
  }
}

export async function findTurnRevert(db: Db, boundaryId: string, turnId: string): Promise<StoredRevert | null> {
  const row = await db.selectFrom('turn_reverts').selectAll().where('boundary_id', '=', boundaryId).where('turn_id', '=', turnId).executeTakeFirst();
  if (!row) return null;
  if (row.status === 'unavailable') return { status: 'unavailable', sessionId: row.session_id, reason: row.reason ?? 'not kept' };
  return { status: row.status === 'reverted' ? 'reverted' : 'available', sessionId: row.session_id, entries: JSON.parse(row.entries) as RevertEntry[] };
}

/**
 * The turn's history entry says it changed no file: its receipt is empty and not cut. False when
 * it changed files, or there is no such entry (the turn never ended, or ended before receipts).
 */
export async function turnChangedNothing(db: Db, sessionId: string, turnId: string): Promise<boolean> {
  const row = await db.selectFrom('history_turns').select('changes').where('session_id', '=', sessionId).where('turn_id', '=', turnId).executeTakeFirst();
  if (!row?.changes) return false;
  const receipt = JSON.parse(row.changes) as { changes: unknown[]; changesTruncated: boolean };
  return receipt.changes.length === 0 && !receipt.changesTruncated;
}

/** The before-bytes of a kept turn, by hash. */
export async function readRevertContents(db: Db, turnId: string): Promise<Map<string, Buffer>> {
  const rows = await db
    .selectFrom('turn_revert_contents')
    .innerJoin('revert_contents', 'revert_contents.hash', 'turn_revert_contents.hash')
    .select(['revert_contents.hash', 'revert_contents.content'])
    .where('turn_revert_contents.turn_id', '=', turnId)
    .execute();
  return new Map(rows.map((row) => [row.hash, Buffer.from(row.content)]));
}

/** Marks a kept turn reverted; false when another revert did first. Its bytes are no longer needed. */
export async function markTurnReverted(db: Db, turnId: string): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const result = await trx.updateTable('turn_reverts').set({ status: 'reverted' }).where('turn_id', '=', turnId).where('status', '=', 'available').executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await dropContentsOf(trx, [turnId]);
    return true;
  });
}

/** A deleted session's reverts and the bytes only they needed (joins the caller's transaction). */
export async function forgetSessionReverts(db: Db, sessionId: string): Promise<void> {
  const rows = await db.selectFrom('turn_reverts').select('turn_id').where('session_id', '=', sessionId).execute();
  await forgetTurns(db, rows.map((row) => row.turn_id));
}

async function forgetTurns(db: Db, turnIds: string[]): Promise<void> {
  if (turnIds.length === 0) return;
  await dropContentsOf(db, turnIds);
  await db.deleteFrom('turn_reverts').where('turn_id', 'in', turnIds).execute();
}

async function dropContentsOf(db: Db, turnIds: string[]): Promise<void> {
  const hashes = (await db.selectFrom('turn_revert_contents').select('hash').where('turn_id', 'in', turnIds).execute()).map((row) => row.hash);
  await db.deleteFrom('turn_revert_contents').where('turn_id', 'in', turnIds).execute();
  if (hashes.length === 0) return;
  const stillUsed = db.selectFrom('turn_revert_contents').select('hash').where('hash', 'in', hashes);
  await db.deleteFrom('revert_contents').where('hash', 'in', hashes).where('hash', 'not in', stillUsed).execute();
}

