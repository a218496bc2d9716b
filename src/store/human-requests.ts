/**
 * The human requests of a cluster's turns (CONTRACT.md §18, docs/CLUSTER.md): the owner of a turn
 * stores each request it publishes, under the turn's attempt (the fence); any instance lists them and
 * answers one, first answer wins; the owner polls for the answers to its own. PostgreSQL only in
 * practice (SQLite cannot cluster), written for both.
 */
import type { Db } from './database.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';
import type { HumanDecision, HumanRequestKind, HumanRequestRecord } from '../domain/human-request.ts';
import type { HumanRequestsTable } from './schema.ts';
import { fencedInsert } from './turn-fence.ts';

/** Stores a pending request while the turn is still at `attempt` (else StaleTurnWrite, nothing stored). */
export async function insertHumanRequest(db: Db, boundaryId: string, request: HumanRequestRecord, attempt: number): Promise<void> {
  const values = {
    id: request.id, boundary_id: boundaryId, turn_id: request.turnId, session_id: request.sessionId, agent_id: request.agentId,
    kind: request.kind, prompt: request.prompt, options: JSON.stringify(request.options), created_at: request.createdAt, status: 'pending',
    decision: null, value: null,
  };
  await fencedInsert(db, 'human_requests', { turnId: request.turnId, attempt }, values);
}

/** The pending requests of the boundary's active turns, newest first (at most 200). */
export async function listPendingRequests(db: Db, boundaryId: string, turnId: string | null): Promise<HumanRequestRecord[]> {
  let query = db
    .selectFrom('human_requests')
    .innerJoin('turns', 'turns.id', 'human_requests.turn_id')
    .selectAll('human_requests')
    .where('human_requests.boundary_id', '=', boundaryId)
    .where('human_requests.status', '=', 'pending')
    .where('turns.status', 'in', [...ACTIVE_STATUSES]);
  if (turnId !== null) query = query.where('human_requests.turn_id', '=', turnId);
  const rows = await query.orderBy('human_requests.created_at', 'desc').orderBy('human_requests.id', 'desc').limit(200).execute();
  return rows.map(fromRow);
}

export type Resolution = { kind: 'resolved'; request: HumanRequestRecord } | { kind: 'not_found' } | { kind: 'already_resolved' } | { kind: 'invalid_decision'; options: string[] };

/**
 * Answers a pending request of an active turn: the first answer wins, whichever instance took it.
 * The turn's owner acts on it when it next polls (answersAmong).
 */
export async function resolveHumanRequest(db: Db, boundaryId: string, id: string, answer: HumanDecision): Promise<Resolution> {
  const row = await db
    .selectFrom('human_requests')
    .innerJoin('turns', 'turns.id', 'human_requests.turn_id')
    .selectAll('human_requests')
    .select('turns.status as turn_status')
    .where('human_requests.boundary_id', '=', boundaryId)
    .where('human_requests.id', '=', id)
    .executeTakeFirst();
  if (!row) return { kind: 'not_found' };
  if (row.status !== 'pending') return { kind: 'already_resolved' };
  // the turn ended (its owner died and it was taken over): the request went with it
  if (!ACTIVE_STATUSES.includes(row.turn_status as never)) return { kind: 'not_found' };
  const request = fromRow(row);
  if (!request.options.includes(answer.decision)) return { kind: 'invalid_decision', options: request.options };
  const updated = await db
    .updateTable('human_requests')
    .set({ status: 'resolved', decision: answer.decision, value: answer.value ?? null })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return updated.numUpdatedRows === 0n ? { kind: 'already_resolved' } : { kind: 'resolved', request };
}

/** Of these requests, the ones answered (by any instance), with their answers. */
export async function answersAmong(db: Db, ids: readonly string[]): Promise<Map<string, HumanDecision>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('human_requests').select(['id', 'decision', 'value']).where('id', 'in', ids).where('status', '=', 'resolved').execute();
  return new Map(rows.map((row) => [row.id, row.value === null ? { decision: row.decision! } : { decision: row.decision!, value: row.value }]));
}

/**
 * The newest request of a turn, with its answer when it has one (null while pending): what a turn
 * taken over while it waited was waiting for. Null when the turn asked nothing, or its newest
 * request was withdrawn.
 */
export async function newestOpenRequest(db: Db, turnId: string): Promise<{ request: HumanRequestRecord; answer: HumanDecision | null } | null> {
  const row = await db.selectFrom('human_requests').selectAll().where('turn_id', '=', turnId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
  if (!row || (row.status !== 'pending' && row.status !== 'resolved')) return null;
  const answer = row.status === 'pending' ? null : row.value === null ? { decision: row.decision! } : { decision: row.decision!, value: row.value };
  return { request: fromRow(row), answer };
}

/** Withdraws the turn's pending requests but `keep` (a turn taken over withdraws what its former owner asked and no longer waits for). */
export async function withdrawHumanRequestsBut(db: Db, turnId: string, keep: string | null): Promise<void> {
  let query = db.updateTable('human_requests').set({ status: 'withdrawn' }).where('turn_id', '=', turnId).where('status', '=', 'pending');
  if (keep !== null) query = query.where('id', '!=', keep);
  await query.execute();
}

/** The turn was cancelled: its pending requests can no longer be answered. */
export async function withdrawHumanRequests(db: Db, turnId: string): Promise<void> {
  await db.updateTable('human_requests').set({ status: 'withdrawn' }).where('turn_id', '=', turnId).where('status', '=', 'pending').execute();
}

function fromRow(row: HumanRequestsTable): HumanRequestRecord {
  return {
    id: row.id,
    turnId: row.turn_id,
    sessionId: row.session_id,
    agentId: row.agent_id,
    kind: row.kind as HumanRequestKind,
    prompt: row.prompt,
    options: JSON.parse(row.options) as string[],
    createdAt: row.created_at,
  };
}
