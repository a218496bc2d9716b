import type { Db } from './database.ts';
import { updateTurn, type TurnRecord } from './turns.ts';
import { insertHistoryTurn, type HistoryTurnRecord } from './history.ts';

export interface SessionChanges {
  sessionId: string;
  updatedAt: string;
  usage: { input: number; output: number; cached: number } | null;
  /** a derived title, set only while the title is not manual */
  derivedTitle: string | null;
}

/**
 * Ends a turn durably in one transaction: its history entry, its terminal state, and the session's
 * usage counters, updatedAt and derived title. Either all of it is written or none.
 */
export async function finalizeTurn(db: Db, turn: TurnRecord, history: HistoryTurnRecord | null, session: SessionChanges): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (history) await insertHistoryTurn(trx, session.sessionId, history);
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
      await trx.updateTable('sessions').set({ title: session.derivedTitle }).where('id', '=', session.sessionId).where('title_is_manual', '=', 0).execute();
    }
  });
}
