import type { Db } from './database.ts';
import type { HistoryTurnsTable } from './schema.ts';
import type { CanonicalItem } from '../agent/providers/types.ts';
import { decodeNullableStoredText, decodeStoredText, encodeNullableStoredText, encodeStoredText } from './text-codec.ts';

export type HistoryEffect = 'append' | 'replace' | 'reset';

export interface HistoryUsage {
  input: number;
  output: number;
  cached: number;
}

export interface HistoryTurnRecord {
  index: number;
  turnId: string | null;
  at: string;
  userText: string;
  assistantText: string | null;
  error: string | null;
  responseId: string | null;
  effect: HistoryEffect;
  items: CanonicalItem[];
  displayItems: unknown[];
  usage: HistoryUsage | null;
  providerTelemetry: unknown;
}

/** The index after the newest turn (the count, since indices are dense from 0). */
export async function nextHistoryIndex(db: Db, sessionId: string): Promise<number> {
  const row = await db.selectFrom('history_turns').select((eb) => eb.fn.max<number>('idx').as('max')).where('session_id', '=', sessionId).executeTakeFirst();
  return row?.max === null || row?.max === undefined ? 0 : Number(row.max) + 1;
}

/** Turns with index in [from, to), oldest first. Uses the primary key range, never a scan. */
export async function readHistoryRange(db: Db, sessionId: string, from: number, to: number): Promise<HistoryTurnRecord[]> {
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

/**
 * Index of the newest turn whose effect starts a new model context (replace or reset), or null.
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

/** Index of the newest `reset` turn (the start of the current generation), or null. */
export async function latestReset(db: Db, sessionId: string): Promise<number | null> {
  const row = await db.selectFrom('history_turns').select('idx').where('session_id', '=', sessionId).where('effect', '=', 'reset').orderBy('idx', 'desc').limit(1).executeTakeFirst();
  return row ? Number(row.idx) : null;
}

export async function insertHistoryTurn(db: Db, sessionId: string, turn: HistoryTurnRecord): Promise<void> {
  await db.insertInto('history_turns').values(toRow(sessionId, turn)).execute();
}

export function toRow(sessionId: string, turn: HistoryTurnRecord): HistoryTurnsTable {
  return {
    session_id: sessionId,
    idx: turn.index,
    turn_id: turn.turnId,
    at: turn.at,
    user_text: encodeStoredText(turn.userText),
    assistant_text: encodeNullableStoredText(turn.assistantText),
    error: encodeNullableStoredText(turn.error),
    response_id: encodeNullableStoredText(turn.responseId),
    effect: turn.effect,
    items: JSON.stringify(turn.items),
    display_items: JSON.stringify(turn.displayItems),
    usage: turn.usage ? JSON.stringify(turn.usage) : null,
    provider_telemetry: turn.providerTelemetry === null || turn.providerTelemetry === undefined ? null : JSON.stringify(turn.providerTelemetry),
  };
}

export function fromRow(row: HistoryTurnsTable): HistoryTurnRecord {
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
    usage: row.usage ? (JSON.parse(row.usage) as HistoryUsage) : null,
    providerTelemetry: row.provider_telemetry ? JSON.parse(row.provider_telemetry) : null,
  };
}
