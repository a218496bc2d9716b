import { createProjectionBudget, projectHistoryItems, projectJson, projectText } from '../domain/projection.ts';
import type { SessionDto } from '../api/schemas.ts';
import type { HistoryEntry } from '../domain/history-entry.ts';
import { latestReset, nextHistoryIndex, readHistoryBelow } from '../store/history.ts';
import type { Boundary } from './boundary.ts';
import type { SessionService } from './sessions.ts';
import { toSessionDto } from './sessions.ts';
import { isTerminal, type ActiveTurn, type TurnService } from './turns.ts';

/** What a history page needs from the boundary runtime (BoundaryRuntime fits). */
export interface HistorySources {
  boundary: Boundary;
  sessions: Pick<SessionService, 'get'>;
  turns: Pick<TurnService, 'activeTurnOf'>;
}

export interface HistoryPageRequest {
  limit: number;
  /** "entries with an index below this"; null = the newest page */
  cursor: number | null;
}

export interface HistoryPageDto {
  session: SessionDto;
  data: { index: number; turn: Record<string, unknown> }[];
  generationStart: number;
  total: number;
  hasOlder: boolean;
  hasNewer: boolean;
  nextCursor: number | null;
}

/**
 * A page of history (CONTRACT.md §8). The durable turns and the provisional entry of an active turn
 * form one sequence indexed 0..total-1; a page holds the newest `limit` entries below the cursor,
 * oldest first. Every query is a seek on the (session_id, idx) key, so the page costs the same in a
 * ten-turn and a ten-thousand-turn session.
 */
export async function readHistoryPage(sources: HistorySources, rawSessionId: string, request: HistoryPageRequest): Promise<HistoryPageDto> {
  const { db } = sources.boundary;
  const session = await sources.sessions.get(rawSessionId);
  const durableTotal = await nextHistoryIndex(db, session.id);
  const below = Math.min(request.cursor ?? Number.POSITIVE_INFINITY, durableTotal + 1);
  const [rows, reset] = await Promise.all([
    readHistoryBelow(db, session.id, Math.min(below, durableTotal), request.limit),
    latestReset(db, session.id),
  ]);
  // Looked up after the rows were read; a turn whose own entry is already among them is ending.
  const active = sources.turns.activeTurnOf(session.id);
  const provisional = active && !rows.some((row) => row.turnId === active.record.id) ? provisionalTurn(active) : null;
  const total = durableTotal + (provisional ? 1 : 0);

  const entries = rows.map((row) => ({ index: row.index, turn: projectHistoryTurn(row) }));
  if (provisional && durableTotal < below) {
    entries.push({ index: durableTotal, turn: provisional });
    if (entries.length > request.limit) entries.shift();
  }
  const oldest = entries[0]?.index ?? Math.min(below, total);
  const newest = entries.length > 0 ? entries[entries.length - 1].index : oldest - 1;
  const hasOlder = oldest > 0;
  return {
    session: toSessionDto(session),
    data: entries,
    generationStart: reset ?? 0,
    total,
    hasOlder,
    hasNewer: newest < total - 1,
    nextCursor: hasOlder ? oldest : null,
  };
}

/** One stored turn under one projection budget (text fields first, then items, then telemetry). */
export function projectHistoryTurn(turn: HistoryEntry): Record<string, unknown> {
  const budget = createProjectionBudget();
  const projected: Record<string, unknown> = {
    at: turn.at,
    userText: projectText(turn.userText, budget),
    assistantText: turn.assistantText === null ? null : projectText(turn.assistantText, budget),
    error: turn.error === null ? null : projectText(turn.error, budget),
    responseId: turn.responseId === null ? null : projectText(turn.responseId, budget),
    effect: turn.effect,
    items: projectHistoryItems(turn.items, budget),
    displayItems: projectHistoryItems(turn.displayItems, budget),
    usage: turn.usage,
    providerTelemetry: projectJson(turn.providerTelemetry, budget),
  };
  if (budget.truncated) projected.projectionTruncated = true;
  return projected;
}

/**
 * The provisional entry of an active turn with non-blank input: never stored, no items, no usage,
 * no assistant text. A turn already in a terminal state is being stored; it is left out.
 */
function provisionalTurn(active: ActiveTurn): Record<string, unknown> | null {
  if (isTerminal(active.record.status) || active.record.input.trim() === '') return null;
  const budget = createProjectionBudget();
  const turn: Record<string, unknown> = {
    at: active.record.createdAt,
    userText: projectText(active.record.userText, budget),
    assistantText: null,
    error: null,
    responseId: null,
    effect: 'append',
    items: [],
    displayItems: [],
    usage: null,
    providerTelemetry: null,
    status: active.record.status,
  };
  if (budget.truncated) turn.projectionTruncated = true;
  return turn;
}
