/**
 * The end of a turn that no owner ended (docs/CLUSTER.md "Every end is announced"): an instance's
 * sweep or a cancel ended it after its owner's lease ran out, or a lone start found it left by a
 * process that is gone. Like an owner's end, a turn that had started gets its history entry (its
 * user message and the failure; what its steps produced is not recovered), in the transaction
 * that ends its row, so exactly once; a turn that never started changes only its row, as an
 * owner's cancel of a queued turn does. The caller publishes the terminal events once it commits.
 */
import type { Db } from './database.ts';
import { buildHistoryEntry } from '../domain/history-entry.ts';
import { appendTurnEnd } from './history.ts';
import { readTurnText } from './turns.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';
import type { OutboxWrite } from './webhook-outbox.ts';

/** A turn ended without its owner, as its row now says. */
export interface OwnerlessEnd {
  id: string;
  sessionId: string;
  attempt: number;
  status: 'failed' | 'cancelled';
  error: string | null;
  startedAt: string | null;
}

/**
 * Appends the history entries of these ended turns, in `trx`, the transaction that ended them:
 * of those that had started, or (`all`) of every one, when the rows cannot tell.
 */
async function appendOwnerlessEnds(trx: Db, ended: readonly OwnerlessEnd[], at: string, which: 'started' | 'all'): Promise<void> {
  for (const turn of ended) {
    if (which === 'started' && turn.startedAt === null) continue;
    const text = await readTurnText(trx, turn.id);
    const entry = buildHistoryEntry(
      { turnId: turn.id, at, userText: text?.userText ?? '', usage: null },
      { kind: 'failed', error: turn.error ?? turn.status, partialItems: [], discardedText: [], providerTelemetry: [] },
    );
    await appendTurnEnd(trx, entry, { sessionId: turn.sessionId, updatedAt: at, derivedTitle: null }, undefined);
  }
}

/** The history entries of turns a cluster's instance ended after their lease ran out (store/turn-leases.ts endExpiredTurns). */
export function appendExpiredEnds(trx: Db, ended: readonly OwnerlessEnd[], at: string): Promise<void> {
  return appendOwnerlessEnds(trx, ended, at, 'started');
}

/**
 * Turns a dead process left queued, running or waiting become failed with error `interrupted`,
 * with their history entries and the webhook deliveries `announce` gives, in one transaction.
 * Answers them, for the caller to publish their ends.
 */
export async function failInterruptedTurns(db: Db, finishedAt: string, announce?: (turns: OwnerlessEnd[]) => OutboxWrite | null): Promise<OwnerlessEnd[]> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .updateTable('turns')
      .set({ status: 'failed', error: 'interrupted', finished_at: finishedAt })
      .where('status', 'in', [...ACTIVE_STATUSES])
      .returning(['id', 'session_id', 'attempt', 'started_at'])
      .execute();
    const ended = rows.map((row) => ({ id: row.id, sessionId: row.session_id, attempt: row.attempt, status: 'failed' as const, error: 'interrupted', startedAt: row.started_at }));
    // without --cluster a turn's row stays `queued` until its end: any of them may have run
    await appendOwnerlessEnds(trx, ended, finishedAt, 'all');
    await announce?.(ended)?.(trx);
    return ended;
  });
}
