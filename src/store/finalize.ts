import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './database.ts';
import type { NewHistoryEntry } from '../domain/history-entry.ts';
import { updateTurn, type TurnRecord } from './turns.ts';
import { appendHistoryEntry, type SessionChanges } from './history.ts';
import { writingSessionRows } from './sessions.ts';

/** The pauses between attempts of a turn's finalisation: a passing lock or connection loss heals. */
export const FINALIZE_RETRY_DELAYS_MS: readonly number[] = [50, 250, 1000];

/**
 * Ends a turn durably in one transaction: its history entry (appended with its usage, see
 * appendHistoryEntry), its terminal state, and the session's updatedAt and derived title. Either
 * all of it is written or none. A failed attempt is retried after each of `retryDelaysMs`; the
 * last failure is thrown.
 */
export async function finalizeTurn(
  db: Db,
  turn: TurnRecord,
  history: NewHistoryEntry,
  session: SessionChanges,
  retryDelaysMs: readonly number[] = FINALIZE_RETRY_DELAYS_MS,
): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await writeFinalState(db, turn, history, session);
      return;
    } catch (error) {
      if (attempt >= retryDelaysMs.length) throw error;
      await sleep(retryDelaysMs[attempt]);
    }
  }
}

async function writeFinalState(db: Db, turn: TurnRecord, history: NewHistoryEntry, session: SessionChanges): Promise<void> {
  // the session's updatedAt, title and usage change: its cached reads end once this commits
  await writingSessionRows(db.transaction().execute(async (trx) => {
    await appendHistoryEntry(trx, session.sessionId, history, session);
    await updateTurn(trx, turn);
  }));
}
