import type { Logger } from 'pino';
import type { Db } from './database.ts';
import { updateTurn } from './turns.ts';
import { StaleTurnWrite } from './turn-fence.ts';
import { type TurnRecord } from '../domain/turn.ts';
import type { OutboxWrite } from './webhook-outbox.ts';

/** Pauses between attempts while the database stays away: quick at first, then every 10 s. */
const RETRY_DELAYS_MS = [500, 1_000, 2_000, 5_000, 10_000];

/**
 * Stores a turn's terminal row now if the database takes it, else keeps trying in the background
 * until it does: a turn that ended during an outage is durably terminal once the database returns,
 * without a restart (issue 17 §3). Resolves after the first attempt. The timers do not hold the
 * process open; if it stops first, start-up marks the row `interrupted` as for any crash.
 * Throws StaleTurnWrite when the turn was taken over; a retry that finds so gives up.
 */
export async function storeTerminalTurn(db: Db, record: TurnRecord, logger: Logger, outbox?: OutboxWrite): Promise<void> {
  const snapshot = { ...record };
  if (await attempt(db, snapshot, outbox, true)) return;
  let retry = 0;
  const again = () => {
    const timer = setTimeout(async () => {
      if (await attempt(db, snapshot, outbox)) {
        logger.info({ turnId: snapshot.id, attempts: retry + 2 }, 'the terminal state of a turn was stored after the database returned');
        return;
      }
      retry += 1;
      again();
    }, RETRY_DELAYS_MS[Math.min(retry, RETRY_DELAYS_MS.length - 1)]);
    timer.unref();
  };
  again();
}

/** true once stored (or once it is known it never will be: the turn was taken over) */
async function attempt(db: Db, record: TurnRecord, outbox: OutboxWrite | undefined, first = false): Promise<boolean> {
  try {
    await storeTurnEnd(db, record, outbox);
    return true;
  } catch (error) {
    if (!(error instanceof StaleTurnWrite)) return false;
    if (first) throw error;
    return true;
  }
}

/** The terminal row, with the webhook deliveries announcing it in the same transaction when there are any. */
export async function storeTurnEnd(db: Db, record: TurnRecord, outbox: OutboxWrite | undefined): Promise<void> {
  if (!outbox) return updateTurn(db, record);
  await db.transaction().execute(async (trx) => {
    await updateTurn(trx, record);
    await outbox(trx);
  });
}
