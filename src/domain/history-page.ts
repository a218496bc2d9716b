/** A page of a session's history (CONTRACT.md §8): stored entries and the active turn's provisional one. */
import type { HistoryEntry } from './history-entry.ts';
import type { SessionRecord } from './session.ts';
import type { TurnRecord } from './turn.ts';

export interface HistoryPageRequest {
  limit: number;
  /** "entries with an index below this"; null = the newest page */
  cursor: number | null;
}

/** An entry of a page: a stored history entry, or the provisional entry of the active turn. */
export type HistoryPageEntry = { index: number; stored: HistoryEntry } | { index: number; provisional: TurnRecord };

export interface HistoryPage {
  session: SessionRecord;
  entries: HistoryPageEntry[];
  generationStart: number;
  total: number;
  hasOlder: boolean;
  hasNewer: boolean;
  nextCursor: number | null;
}
