import type { FileChanges } from './file-changes.ts';
import type { CanonicalItem } from './canonical-item.ts';
import { toUsageCounters, type ModelUsage, type UsageCounters } from './usage.ts';

/**
 * What an entry does to the model context: `append` adds its items to it, `replace` starts it
 * anew from its items (a compaction summary), `reset` starts a new, empty generation (`/clear`).
 */
export const HISTORY_EFFECTS = ['append', 'replace', 'reset'] as const;
export type HistoryEffect = (typeof HISTORY_EFFECTS)[number];

/** One durable entry of a session's history, at its index (dense from 0). */
export interface HistoryEntry {
  index: number;
  /** the turn whose own entry this is; null for an entry no turn owns (an automatic compaction) */
  turnId: string | null;
  at: string;
  userText: string;
  assistantText: string | null;
  error: string | null;
  responseId: string | null;
  effect: HistoryEffect;
  /** what later model requests see */
  items: CanonicalItem[];
  /** what a client shows: the items, plus output that never reaches a model */
  displayItems: unknown[];
  usage: UsageCounters | null;
  /** one entry per agent that made model requests, the main agent first (CONTRACT.md §15) */
  providerTelemetry: unknown[];
  /** what the turn's tools changed in the workspace (CONTRACT.md §20); absent on entries no turn's tools wrote */
  changes?: FileChanges;
  /** the turn's structured result (CONTRACT.md §22); absent on entries of turns without an outputSchema */
  result?: unknown;
}

/** An entry before the store gives it its index. */
export type NewHistoryEntry = Omit<HistoryEntry, 'index'>;

export interface HistoryEntryOrigin {
  turnId: string | null;
  at: string;
  userText: string;
  /** everything the model steps behind the entry consumed, failed ones included */
  usage: ModelUsage | null;
}

/** How the work behind an entry ended: with an answer (or a summary), or with an error. */
export type HistoryEntryEnding =
  | {
      kind: 'answered';
      effect: HistoryEffect;
      assistantText: string | null;
      responseId: string | null;
      items: CanonicalItem[];
      /** text of attempts that were retried away */
      discardedText: string[];
      providerTelemetry: unknown[];
      /** the structured result, when the turn had an outputSchema */
      result?: unknown;
    }
  | { kind: 'failed'; error: string; partialItems: CanonicalItem[]; discardedText: string[]; providerTelemetry?: unknown[] };

/** The one way history entries are made, whoever writes them (turn finalisation, compaction). */
export function buildHistoryEntry(origin: HistoryEntryOrigin, ending: HistoryEntryEnding): NewHistoryEntry {
  // Steps that completed before a failure were billed: they count, in history and in the session.
  const common = { turnId: origin.turnId, at: origin.at, userText: origin.userText, usage: toUsageCounters(origin.usage) };
  if (ending.kind === 'answered') {
    return {
      ...common,
      assistantText: ending.assistantText,
      error: null,
      responseId: ending.responseId,
      effect: ending.effect,
      items: ending.items,
      displayItems: [...ending.items, ...discardedAsDisplay(ending.discardedText)],
      providerTelemetry: ending.providerTelemetry,
      ...('result' in ending ? { result: ending.result } : {}),
    };
  }
  // Partial output is for display only: it never reaches `items`, so never a model again.
  return {
    ...common,
    assistantText: null,
    error: ending.error,
    responseId: null,
    effect: 'append',
    items: [],
    displayItems: [...ending.partialItems, ...discardedAsDisplay(ending.discardedText)],
    providerTelemetry: ending.providerTelemetry ?? [],
  };
}

/**
 * A stored `providerTelemetry` as the array CONTRACT.md §15 promises: entries written before it was
 * an array (one object, or null when no request completed) read as one entry, or none.
 */
export function telemetryList(stored: unknown): unknown[] {
  if (Array.isArray(stored)) return stored;
  return stored !== null && typeof stored === 'object' ? [stored] : [];
}

function discardedAsDisplay(texts: string[]): CanonicalItem[] {
  return texts.map((text) => ({ type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text }] }));
}
