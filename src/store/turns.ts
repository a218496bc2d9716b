import type { Db } from './database.ts';
import type { TurnsTable } from './schema.ts';

export type TurnStatus = 'queued' | 'running' | 'waiting_for_input' | 'completed' | 'failed' | 'cancelled';
export const ACTIVE_STATUSES: readonly TurnStatus[] = ['queued', 'running', 'waiting_for_input'];

export interface TurnOutputRecord {
  responseId: string | null;
  assistantText: string | null;
  assistantTextTruncated: boolean;
  completion: { status: 'completed' | 'incomplete'; reason?: string; reasoningTokens: number | null };
}

export interface TurnRecord {
  id: string;
  boundaryId: string;
  sessionId: string;
  clientRequestId: string;
  inputDigest: string;
  status: TurnStatus;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  input: string;
  userText: string;
  output: TurnOutputRecord | null;
}

export async function insertTurn(db: Db, turn: TurnRecord): Promise<void> {
  await db.insertInto('turns').values(toRow(turn)).execute();
}

export async function findTurn(db: Db, boundaryId: string, id: string): Promise<TurnRecord | null> {
  const row = await db.selectFrom('turns').selectAll().where('boundary_id', '=', boundaryId).where('id', '=', id).executeTakeFirst();
  return row ? fromRow(row) : null;
}

export async function findTurnByClientRequestId(db: Db, sessionId: string, clientRequestId: string): Promise<TurnRecord | null> {
  const row = await db.selectFrom('turns').selectAll().where('session_id', '=', sessionId).where('client_request_id', '=', clientRequestId).executeTakeFirst();
  return row ? fromRow(row) : null;
}

export async function listTurns(db: Db, boundaryId: string, sessionId: string | null, limit: number): Promise<TurnRecord[]> {
  let query = db.selectFrom('turns').selectAll().where('boundary_id', '=', boundaryId);
  if (sessionId) query = query.where('session_id', '=', sessionId);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map(fromRow);
}

export async function updateTurn(db: Db, turn: TurnRecord): Promise<void> {
  const row = toRow(turn);
  await db
    .updateTable('turns')
    .set({ status: row.status, started_at: row.started_at, finished_at: row.finished_at, error: row.error, output: row.output })
    .where('id', '=', turn.id)
    .execute();
}

/** Turns a dead process left queued, running or waiting become failed with error `interrupted`. */
export async function failInterruptedTurns(db: Db, finishedAt: string): Promise<number> {
  const result = await db
    .updateTable('turns')
    .set({ status: 'failed', error: 'interrupted', finished_at: finishedAt })
    .where('status', 'in', [...ACTIVE_STATUSES])
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

function toRow(turn: TurnRecord): TurnsTable {
  return {
    id: turn.id,
    boundary_id: turn.boundaryId,
    session_id: turn.sessionId,
    client_request_id: turn.clientRequestId,
    input_digest: turn.inputDigest,
    status: turn.status,
    created_at: turn.createdAt,
    started_at: turn.startedAt,
    finished_at: turn.finishedAt,
    error: turn.error,
    input: turn.input,
    user_text: turn.userText,
    output: turn.output ? JSON.stringify(turn.output) : null,
  };
}

function fromRow(row: TurnsTable): TurnRecord {
  return {
    id: row.id,
    boundaryId: row.boundary_id,
    sessionId: row.session_id,
    clientRequestId: row.client_request_id,
    inputDigest: row.input_digest,
    status: row.status as TurnStatus,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    error: row.error,
    input: row.input,
    userText: row.user_text,
    output: row.output ? (JSON.parse(row.output) as TurnOutputRecord) : null,
  };
}
