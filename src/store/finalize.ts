import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './database.ts';
import type { NewHistoryEntry } from '../domain/history-entry.ts';
import { updateTurn } from './turns.ts';
import { StaleTurnWrite } from './turn-fence.ts';
import { type TurnRecord } from '../domain/turn.ts';
import { appendTurnEnd, type SessionChanges } from './history.ts';
import { writingSessionRow } from './sessions.ts';
import type { OutboxWrite } from './webhook-outbox.ts';

/** The pauses between attempts of a turn's finalisation: a passing lock or connection loss heals. */
export const FINALIZE_RETRY_DELAYS_MS: readonly number[] = [50, 250, 1000];

export interface FinalizeOptions {
  /** the index the entry takes on the first attempt (the model context cache's); a retry reads it */
  index?: number;
  retryDelaysMs?: readonly number[];
  /** the webhook deliveries announcing the turn's end, written in the same transaction */
  outbox?: OutboxWrite;
}

/**
 * Ends a turn durably in one transaction: its history entry (appended with its usage, see
 * appendHistoryEntry), its terminal state, the session's updatedAt and derived title, and the
 * webhook deliveries announcing it. Either
 * all of it is written or none. A failed attempt is retried after each of `retryDelaysMs`; the
 * last failure is thrown. Answers the entry's index.
 */
export async function finalizeTurn(db: Db, turn: TurnRecord, history: NewHistoryEntry, session: SessionChanges, options: FinalizeOptions = {}): Promise<number> {
  const retryDelaysMs = options.retryDelaysMs ?? FINALIZE_RETRY_DELAYS_MS;
  for (let attempt = 0; ; attempt += 1) {
    try {
      // after a failure the expected index may be what failed (another entry took it): read it
      return await writeFinalState(db, turn, history, session, attempt === 0 ? options.index : undefined, options.outbox);
    } catch (error) {
      // a turn taken over stays so: asking again would only be refused again
      if (attempt >= retryDelaysMs.length || error instanceof StaleTurnWrite) throw error;
      await sleep(retryDelaysMs[attempt]);
    }
  }
}

async function writeFinalState(db: Db, turn: TurnRecord, history: NewHistoryEntry, session: SessionChanges, index: number | undefined, outbox: OutboxWrite | undefined): Promise<number> {
  // the session's updatedAt, title and usage change: its cached reads end once this commits, and
  // the row it leaves is kept for the next turn's submission (session-row-cache.ts)
  const write = () =>
    db.transaction().execute(async (trx) => {
      // the fenced write first: a former owner's transaction ends before it writes anything
      await updateTurn(trx, turn);
      const appended = await appendTurnEnd(trx, history, session, index);
      await outbox?.(trx);
      return appended;
    });
  const { index: stored } = await writingSessionRow(db, session.sessionId, write, (appended) => appended.sessionRow);
  return stored;
}
