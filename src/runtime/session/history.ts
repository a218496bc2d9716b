import type { HistoryPage, HistoryPageEntry, HistoryPageRequest } from '../../domain/history-page.ts';
import { isTerminal } from '../../domain/turn-lifecycle.ts';
import { latestReset, nextHistoryIndex, readHistoryBelow } from '../../store/history.ts';
import type { TurnRecord } from '../../domain/turn.ts';
import type { Boundary } from '../boundary.ts';
import type { SessionService } from './sessions.ts';
import type { ActiveTurns } from '../turn/active-turns.ts';

/** What a history page needs from the boundary runtime (BoundaryRuntime fits). */
export interface HistorySources {
  boundary: Boundary;
  sessions: Pick<SessionService, 'get'>;
  activeTurns: Pick<ActiveTurns, 'ofSession'>;
}

/**
 * A page of history (CONTRACT.md §8). The durable turns and the provisional entry of an active turn
 * form one sequence indexed 0..total-1; a page holds the newest `limit` entries below the cursor,
 * oldest first. Every query is a seek on the (session_id, idx) key, so the page costs the same in a
 * ten-turn and a ten-thousand-turn session. The API projects the entries (api/dto.ts).
 */
export async function readHistoryPage(sources: HistorySources, rawSessionId: string, request: HistoryPageRequest): Promise<HistoryPage> {
  const { db } = sources.boundary;
  const session = await sources.sessions.get(rawSessionId);
  const durableTotal = await nextHistoryIndex(db, session.id);
  const below = Math.min(request.cursor ?? Number.POSITIVE_INFINITY, durableTotal + 1);
  const [rows, reset] = await Promise.all([
    readHistoryBelow(db, session.id, Math.min(below, durableTotal), request.limit),
    latestReset(db, session.id),
  ]);
  // Looked up after the rows were read; a turn whose own entry is already among them is ending.
  const active = sources.activeTurns.ofSession(session.id)?.record;
  const provisional = active && !rows.some((row) => row.turnId === active.id) && hasProvisionalEntry(active) ? { ...active } : null;
  const total = durableTotal + (provisional ? 1 : 0);

  const entries: HistoryPageEntry[] = rows.map((row) => ({ index: row.index, stored: row }));
  if (provisional && durableTotal < below) {
    entries.push({ index: durableTotal, provisional });
    if (entries.length > request.limit) entries.shift();
  }
  const oldest = entries[0]?.index ?? Math.min(below, total);
  const newest = entries.length > 0 ? entries[entries.length - 1].index : oldest - 1;
  const hasOlder = oldest > 0;
  return {
    session,
    entries,
    generationStart: reset ?? 0,
    total,
    hasOlder,
    hasNewer: newest < total - 1,
    nextCursor: hasOlder ? oldest : null,
  };
}

/**
 * An active turn with non-blank input shows a provisional entry: never stored, no items, no usage,
 * no assistant text. A turn already in a terminal state is being stored; it is left out.
 */
function hasProvisionalEntry(turn: TurnRecord): boolean {
  return !isTerminal(turn.status) && turn.input.trim() !== '';
}
