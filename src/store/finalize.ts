import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './database.ts';
import { updateTurn, type TurnRecord } from './turns.ts';
import { insertHistoryTurn, nextHistoryIndex, type HistoryTurnRecord } from './history.ts';
import { encodeStoredText } from './text-codec.ts';

export interface SessionChanges {
  sessionId: string;
  updatedAt: string;
  usage: { input: number; output: number; cached: number } | null;
  /** a derived title, set only while the title is not manual */
  derivedTitle: string | null;
}

/** The pauses between attempts of a turn's finalisation: a passing lock or connection loss heals. */
export const FINALIZE_RETRY_DELAYS_MS: readonly number[] = [50, 250, 1000];

/**
 * Ends a turn durably in one transaction: its history entry (at the next index of the session,
 * read inside the transaction), its terminal state, and the session's usage counters, updatedAt
 * and derived title. Either all of it is written or none. A failed attempt is retried after each
 * of `retryDelaysMs`; the last failure is thrown.
 */
export async function finalizeTurn(
  db: Db,
  turn: TurnRecord,
  history: Omit<HistoryTurnRecord, 'index'> | null,
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

async function writeFinalState(db: Db, turn: TurnRecord, history: Omit<HistoryTurnRecord, 'index'> | null, session: SessionChanges): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (history) await insertHistoryTurn(trx, session.sessionId, { ...history, index: await nextHistoryIndex(trx, session.sessionId) });
    await updateTurn(trx, turn);
    let update = trx.updateTable('sessions').set({ updated_at: session.updatedAt }).where('id', '=', session.sessionId);
    if (session.usage) {
      const usage = session.usage;
      update = update.set((eb) => ({
        usage_input: eb('usage_input', '+', usage.input),
        usage_output: eb('usage_output', '+', usage.output),
        usage_cached: eb('usage_cached', '+', usage.cached),
      }));
    }
    await update.execute();
    if (session.derivedTitle !== null) {
      await trx.updateTable('sessions').set({ title: encodeStoredText(session.derivedTitle) }).where('id', '=', session.sessionId).where('title_is_manual', '=', 0).execute();
    }
  });
}
