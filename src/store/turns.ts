import { sql } from 'kysely';
import type { Db } from './database.ts';
import type { TurnsTable } from './schema.ts';
import { boundEventText, EVENT_TEXT_LIMIT } from '../domain/event-text.ts';
import { ACTIVE_STATUSES, type TurnStatus } from '../domain/turn-status.ts';
import type { TurnOutputRecord, TurnRecord, TurnText } from '../domain/turn.ts';
import { preparedQuery, rowParams, type Param } from './prepared-query.ts';
import { requireWritten } from './turn-fence.ts';
import type { OutboxWrite } from './webhook-outbox.ts';
import { decodeNullableStoredText, decodeStoredText, encodeNullableStoredText, encodeStoredText, MAX_ESCAPE_WIDTH, STORED_TEXT_MARKER } from './text-codec.ts';

/** A turn record whose text is the whole text, bounded for keeping in memory. */
export function boundTurnText(text: TurnText): Pick<TurnRecord, 'input' | 'userText' | 'inputTruncated'> {
  const input = boundEventText(text.input);
  const userText = text.input === text.userText ? input : boundEventText(text.userText);
  return { input: input.text, userText: userText.text, inputTruncated: input.truncated || userText.truncated };
}

/** Inserts a new turn with its whole text; `turn`'s own text fields are not written. */
export async function insertTurn(db: Db, turn: TurnRecord, text: TurnText): Promise<void> {
  await insertTurnRow(db, newTurnRow(turn, text));
}

/** The row of a new turn with its whole text (`turn`'s own text fields are bounded). */
export function newTurnRow(turn: TurnRecord, text: TurnText): NewTurnRow {
  return { ...toRow(turn), input: encodeStoredText(text.input), user_text: encodeStoredText(text.userText), output_schema: text.outputSchema ?? null };
}

const TURN_COLUMNS = {
  id: true, boundary_id: true, session_id: true, client_request_id: true, input_digest: true, status: true,
  created_at: true, started_at: true, finished_at: true, error: true, input: true, user_text: true, output: true, attempt: true, output_schema: true,
} as const;

type InsertedRow = Omit<TurnsTable, 'lease_owner' | 'lease_expires_at' | 'cancel_requested_at' | 'movable' | 'takeovers'>;
export type NewTurnRow = InsertedRow;

const insertTurnRow = preparedQuery((db, param: Param<InsertedRow>) => db.insertInto('turns').values(rowParams(param, TURN_COLUMNS)));

export async function findTurn(db: Db, boundaryId: string, id: string): Promise<TurnRecord | null> {
  const row = await selectTurns(db).where('boundary_id', '=', boundaryId).where('id', '=', id).executeTakeFirst();
  return row ? fromRow(row) : null;
}

export async function findTurnByClientRequestId(db: Db, sessionId: string, clientRequestId: string): Promise<TurnRecord | null> {
  const row = await selectTurns(db).where('session_id', '=', sessionId).where('client_request_id', '=', clientRequestId).executeTakeFirst();
  return row ? fromRow(row) : null;
}

export async function listTurns(db: Db, boundaryId: string, sessionId: string | null, limit: number): Promise<TurnRecord[]> {
  let query = selectTurns(db).where('boundary_id', '=', boundaryId);
  if (sessionId) query = query.where('session_id', '=', sessionId);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map(fromRow);
}

/** The whole submitted text of a turn (for running it), or null when there is no such turn. */
export async function readTurnText(db: Db, id: string): Promise<TurnText | null> {
  const row = await db.selectFrom('turns').select(['input', 'user_text', 'output_schema']).where('id', '=', id).executeTakeFirst();
  return row ? { input: decodeStoredText(row.input), userText: decodeStoredText(row.user_text), outputSchema: row.output_schema } : null;
}

/*
 * Reads of turn records fetch only the head of the text columns, so a turn with a 20 MB input
 * costs its bounded text, not its whole text, to look up or list. `substr` counts
 * code points on both backends; a JavaScript character is a UTF-16 code unit, of which a code
 * point has at least one, so a head one code point longer than the bound decodes to more than
 * the bound whenever it is not the whole text, and bounding it gives what bounding the whole
 * text would. An escaped value (see text-codec.ts) spends up to MAX_ESCAPE_WIDTH stored
 * characters per character, so its head is that much wider.
 */
const PLAIN_HEAD = EVENT_TEXT_LIMIT + 1;
const ESCAPED_HEAD = 1 + PLAIN_HEAD * MAX_ESCAPE_WIDTH;

function textHead(column: 'input' | 'user_text') {
  const ref = sql.ref(column);
  return sql<string>`case when substr(${ref}, 1, 1) = ${STORED_TEXT_MARKER} then substr(${ref}, 1, ${sql.lit(ESCAPED_HEAD)}) else substr(${ref}, 1, ${sql.lit(PLAIN_HEAD)}) end`;
}

function selectTurns(db: Db) {
  return db
    .selectFrom('turns')
    .select(['id', 'boundary_id', 'session_id', 'client_request_id', 'input_digest', 'status', 'created_at', 'started_at', 'finished_at', 'error', 'output', 'attempt'])
    .select([textHead('input').as('input'), textHead('user_text').as('user_text')]);
}

/** Writes the turn's state, only while its attempt is still the turn's (else StaleTurnWrite). */
export async function updateTurn(db: Db, turn: TurnRecord): Promise<void> {
  requireWritten((await updateTurnRow(db, toRow(turn))).numAffectedRows, { turnId: turn.id, attempt: turn.attempt });
}

const updateTurnRow = preparedQuery((db, param: Param<Omit<InsertedRow, 'input' | 'user_text' | 'output_schema'>>) =>
  db
    .updateTable('turns')
    .set({
      status: param((row) => row.status),
      started_at: param((row) => row.started_at),
      finished_at: param((row) => row.finished_at),
      error: param((row) => row.error),
      output: param((row) => row.output),
    })
    .where('id', '=', param((row) => row.id))
    .where('attempt', '=', param((row) => row.attempt)),
);

/** Every column but the text ones, which only insertTurn writes. */
function toRow(turn: TurnRecord): Omit<InsertedRow, 'input' | 'user_text' | 'output_schema'> {
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
    error: encodeNullableStoredText(turn.error),
    output: turn.output ? JSON.stringify(turn.output) : null,
    attempt: turn.attempt,
  };
}

/** A row whose text columns hold heads (see selectTurns). */
function fromRow(row: Omit<InsertedRow, 'output_schema'>): TurnRecord {
  const { input, userText, inputTruncated } = boundTurnText({ input: decodeStoredText(row.input), userText: decodeStoredText(row.user_text) });
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
    error: decodeNullableStoredText(row.error),
    input,
    userText,
    inputTruncated,
    output: row.output ? (JSON.parse(row.output) as TurnOutputRecord) : null,
    attempt: row.attempt,
  };
}
