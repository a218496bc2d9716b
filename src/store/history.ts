import type { FileChanges } from '../domain/file-changes.ts';
import type { Db } from './database.ts';
import type { HistoryTurnsTable, SessionsTable } from './schema.ts';
import type { CanonicalItem } from '../domain/canonical-item.ts';
import { telemetryList, type HistoryEffect, type HistoryEntry, type NewHistoryEntry } from '../domain/history-entry.ts';
import type { UsageCounters } from '../domain/usage.ts';
import { addSessionUsage, writingSessionRow, writingSessionRows } from './sessions.ts';
import { preparedQuery, rowParams, type Param } from './prepared-query.ts';
import { decodeNullableStoredText, decodeStoredText, encodeNullableStoredText, encodeStoredText } from './text-codec.ts';

/*
 * A session's history: entries at dense indices from 0. Every query seeks the primary key
 * (session_id, idx), so its cost follows the number of entries read, not the length of the session.
 */

/**
 * The one way an entry joins a session's history: at the next index, with its usage added to the
 * session's counters in the same transaction. Joins the caller's transaction, or opens its own.
 * The next index is read inside the transaction, unless the caller gives the one it knows
 * (`options.index`, the model context cache's): the primary key then refuses it if another entry
 * has taken it, failing the transaction. Two appends racing on one session cannot share an index:
 * the later one fails on the primary key. Returns the index given.
 */
export async function appendHistoryEntry(db: Db, sessionId: string, entry: NewHistoryEntry, options: AppendOptions = {}): Promise<number> {
  // its own transaction may add to the session's usage: cached reads end once it commits
  if (!db.isTransaction) return writingSessionRow(db, sessionId, () => db.transaction().execute((trx) => appendHistoryEntry(trx, sessionId, entry, options)));
  const index = options.index ?? (await nextHistoryIndex(db, sessionId));
  await insertHistoryEntry(db, sessionId, { ...entry, index });
  if (entry.usage) await addSessionUsage(db, sessionId, entry.usage);
  return index;
}

export interface AppendOptions {
  /** the index the entry takes, when the caller knows the next one; read from the history otherwise */
  index?: number;
}

/**
 * A turn's end inside the caller's transaction (finalize.ts): the entry joins the history as with
 * appendHistoryEntry, and the session's usage, updatedAt and derived title change in one
 * statement. Answers the index and the session's row as that statement left it, for the caller
 * to hand the session-row cache once the transaction commits.
 */
export async function appendTurnEnd(trx: Db, entry: NewHistoryEntry, changes: SessionChanges, knownIndex: number | undefined): Promise<AppendedTurnEnd> {
  const index = knownIndex ?? (await nextHistoryIndex(trx, changes.sessionId));
  await insertHistoryEntry(trx, changes.sessionId, { ...entry, index });
  const sessionRow = (await updateSessionAfterEntry(trx, changes.sessionId, entry.usage, changes)) ?? null;
  return { index, sessionRow };
}

export interface AppendedTurnEnd {
  index: number;
  /** the session's row after the turn's end, read back by its statement; null if none was left */
  sessionRow: SessionsTable | null;
}

/** What a turn's end changes in its session besides usage (see finalize.ts). */
export interface SessionChanges {
  sessionId: string;
  updatedAt: string;
  /** a derived title, set only while the title is not manual */
  derivedTitle: string | null;
  /** what the turn adds to `spent` and leaves as `context`; absent: both stay as they are */
  spending?: SessionSpending;
}

/** See TurnSpending (runtime/turn/turn-outcome.ts): nulls leave the session's figure as it is. */
interface SessionSpending {
  costUsd: number | null;
  contextUsedTokens: number | null;
  contextWindow: number | null;
}

const NO_SPENDING: SessionSpending = { costUsd: null, contextUsedTokens: null, contextWindow: null };

/**
 * The session's usage, updatedAt and derived title in one statement: a turn's end makes one write
 * to its session, and reads the row it leaves back in the same statement (RETURNING), for the
 * next turn's submission to find in the session row cache.
 */
async function updateSessionAfterEntry(db: Db, sessionId: string, usage: UsageCounters | null, changes: SessionChanges): Promise<SessionsTable | undefined> {
  const title = changes.derivedTitle === null ? null : encodeStoredText(changes.derivedTitle);
  const { rows } = await writingSessionRows(db, updateSessionRowAfterEntry(db, { sessionId, updatedAt: changes.updatedAt, usage: usage ?? NO_USAGE, title, spending: changes.spending ?? NO_SPENDING }));
  return rows[0];
}

const NO_USAGE: UsageCounters = { input: 0, output: 0, cached: 0 };

/*
 * One statement for every turn's end: no usage adds zeros, and no derived title (null) keeps the
 * title, as does a manual one. A cost joins the session's (which is null until a priced request
 * when its model had no prices); no cost, context or window (null) keeps what is there.
 */
const updateSessionRowAfterEntry = preparedQuery<
  { sessionId: string; updatedAt: string; usage: UsageCounters; title: string | null; spending: SessionSpending },
  SessionsTable
>(
  (db, param) =>
    db
      .updateTable('sessions')
      .set((eb) => ({
        updated_at: param((values) => values.updatedAt),
        usage_input: eb('usage_input', '+', param((values) => values.usage.input)),
        usage_output: eb('usage_output', '+', param((values) => values.usage.output)),
        usage_cached: eb('usage_cached', '+', param((values) => values.usage.cached)),
        // the sum when both are there, else whichever is (both null: null)
        spent_cost_usd: eb.fn.coalesce(
          eb('spent_cost_usd', '+', param((values) => values.spending.costUsd)),
          eb.ref('spent_cost_usd'),
          eb.val(param((values) => values.spending.costUsd)),
        ),
        context_used_tokens: eb.fn.coalesce(eb.val(param((values) => values.spending.contextUsedTokens)), eb.ref('context_used_tokens')),
        context_window: eb.fn.coalesce(eb.val(param((values) => values.spending.contextWindow)), eb.ref('context_window')),
        title: eb
          .case()
          .when('title_is_manual', '=', 0)
          .then(eb.fn.coalesce(eb.val(param((values) => values.title)), eb.ref('title')))
          .else(eb.ref('title'))
          .end(),
      }))
      .where('id', '=', param((values) => values.sessionId))
      .returningAll(),
);

/** Writes an entry at the index it carries, touching nothing else (tests and benchmarks seed with it). */
export async function insertHistoryEntry(db: Db, sessionId: string, entry: HistoryEntry): Promise<void> {
  await insertHistoryRow(db, toRow(sessionId, entry));
}

const HISTORY_COLUMNS = {
  session_id: true, idx: true, turn_id: true, at: true, user_text: true, assistant_text: true, error: true,
  response_id: true, effect: true, items: true, display_items: true, usage: true, provider_telemetry: true, changes: true, result: true,
} as const;

const insertHistoryRow = preparedQuery((db, param: Param<HistoryTurnsTable>) => db.insertInto('history_turns').values(rowParams(param, HISTORY_COLUMNS)));

/** The index after the newest entry (the count, since indices are dense from 0). */
export async function nextHistoryIndex(db: Db, sessionId: string): Promise<number> {
  const { rows } = await newestHistoryIndex(db, { sessionId });
  const max = rows[0]?.max;
  return max === null || max === undefined ? 0 : Number(max) + 1;
}

const newestHistoryIndex = preparedQuery((db, param: Param<{ sessionId: string }>) =>
  db
    .selectFrom('history_turns')
    .select((eb) => eb.fn.max<number>('idx').as('max'))
    .where('session_id', '=', param((values) => values.sessionId)),
);

/** Entries with index in [from, to), oldest first. */
export async function readHistoryRange(db: Db, sessionId: string, from: number, to: number): Promise<HistoryEntry[]> {
  if (to <= from) return [];
  const rows = await db
    .selectFrom('history_turns')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('idx', '>=', from)
    .where('idx', '<', to)
    .orderBy('idx', 'asc')
    .execute();
  return rows.map(fromRow);
}

/** Up to `limit` entries with index below `below`, oldest first (a backward keyset seek, for pages). */
export async function readHistoryBelow(db: Db, sessionId: string, below: number, limit: number): Promise<HistoryEntry[]> {
  if (below <= 0 || limit <= 0) return [];
  const rows = await db
    .selectFrom('history_turns')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('idx', '<', below)
    .orderBy('idx', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse().map(fromRow);
}

/**
 * Index of the newest entry whose effect starts a new model context (replace or reset), or null.
 * One indexed lookup per effect: an `in (...)` filter makes SQLite walk the whole session.
 */
export async function latestContextStart(db: Db, sessionId: string, below?: number): Promise<{ index: number; effect: HistoryEffect } | null> {
  const newest = async (effect: HistoryEffect) => {
    let query = db.selectFrom('history_turns').select('idx').where('session_id', '=', sessionId).where('effect', '=', effect);
    if (below !== undefined) query = query.where('idx', '<', below);
    const row = await query.orderBy('idx', 'desc').limit(1).executeTakeFirst();
    return row ? { index: Number(row.idx), effect } : null;
  };
  const [replace, reset] = await Promise.all([newest('replace'), newest('reset')]);
  if (!replace) return reset;
  if (!reset) return replace;
  return replace.index > reset.index ? replace : reset;
}

/** Index of the newest `reset` entry (the start of the current generation), or null. */
export async function latestReset(db: Db, sessionId: string): Promise<number | null> {
  const row = await db.selectFrom('history_turns').select('idx').where('session_id', '=', sessionId).where('effect', '=', 'reset').orderBy('idx', 'desc').limit(1).executeTakeFirst();
  return row ? Number(row.idx) : null;
}

function toRow(sessionId: string, entry: HistoryEntry): HistoryTurnsTable {
  return {
    session_id: sessionId,
    idx: entry.index,
    turn_id: entry.turnId,
    at: entry.at,
    user_text: encodeStoredText(entry.userText),
    assistant_text: encodeNullableStoredText(entry.assistantText),
    error: encodeNullableStoredText(entry.error),
    response_id: encodeNullableStoredText(entry.responseId),
    effect: entry.effect,
    items: JSON.stringify(entry.items),
    display_items: JSON.stringify(entry.displayItems),
    usage: entry.usage ? JSON.stringify(entry.usage) : null,
    provider_telemetry: JSON.stringify(entry.providerTelemetry),
    changes: entry.changes ? JSON.stringify(entry.changes) : null,
    result: 'result' in entry ? JSON.stringify(entry.result) : null,
  };
}

function fromRow(row: HistoryTurnsTable): HistoryEntry {
  return {
    index: Number(row.idx),
    turnId: row.turn_id,
    at: row.at,
    userText: decodeStoredText(row.user_text),
    assistantText: decodeNullableStoredText(row.assistant_text),
    error: decodeNullableStoredText(row.error),
    responseId: decodeNullableStoredText(row.response_id),
    effect: row.effect as HistoryEffect,
    items: JSON.parse(row.items) as CanonicalItem[],
    displayItems: JSON.parse(row.display_items) as unknown[],
    usage: row.usage ? (JSON.parse(row.usage) as UsageCounters) : null,
    providerTelemetry: telemetryList(row.provider_telemetry ? JSON.parse(row.provider_telemetry) : null),
    ...(row.changes ? { changes: JSON.parse(row.changes) as FileChanges } : {}),
    ...(row.result ? { result: JSON.parse(row.result) as unknown } : {}),
  };
}
