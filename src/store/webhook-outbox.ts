/**
 * The webhook outbox (migration 0008): deliveries still owed. Rows are inserted inside the
 * transaction that stores what their event announces, claimed by pushing their due time past the
 * attempt (a conditional update, so two instances of a cluster never send one row at once), and
 * deleted once delivered or dropped. Written for both backends.
 */
import type { Db } from './database.ts';
import type { WebhookOutboxTable } from './schema.ts';

export type OutboxRow = WebhookOutboxTable;

/** Writes the deliveries announcing something into the transaction that stores it (runtime/webhooks/). */
export type OutboxWrite = (trx: Db) => Promise<void>;

export async function insertOutboxRows(db: Db, rows: readonly OutboxRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('webhook_outbox').values([...rows]).execute();
}

/**
 * Claims up to `limit` rows due at `now` (the longest-waiting first) for one attempt each, until
 * `until`, in one statement, and answers them as they were before the claim. The outer condition
 * is checked again on a row another instance claimed meanwhile (PostgreSQL re-reads a row an
 * update waited for), so no row is claimed twice.
 */
export async function claimDueOutboxRows(db: Db, now: number, until: number, limit: number): Promise<OutboxRow[]> {
  const claimed = await db
    .updateTable('webhook_outbox')
    .set({ next_attempt_at: until })
    .where('next_attempt_at', '<=', now)
    .where('id', 'in', (eb) => eb.selectFrom('webhook_outbox').select('id').where('next_attempt_at', '<=', now).orderBy('next_attempt_at').orderBy('id').limit(limit))
    .returningAll()
    .execute();
  return claimed.sort((a, b) => a.created_at - b.created_at);
}

/** When the next row falls due, or null with none owed. */
export async function nextOutboxDue(db: Db): Promise<number | null> {
  const row = await db.selectFrom('webhook_outbox').select((eb) => eb.fn.min('next_attempt_at').as('due')).executeTakeFirst();
  return row?.due === null || row?.due === undefined ? null : Number(row.due);
}

export async function deleteOutboxRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('webhook_outbox').where('id', '=', id).execute();
}

export async function rescheduleOutboxRow(db: Db, id: string, attempts: number, nextAttemptAt: number): Promise<void> {
  await db.updateTable('webhook_outbox').set({ attempts, next_attempt_at: nextAttemptAt }).where('id', '=', id).execute();
}

/** A lone process starting: claims a dead process left are void, and every owed row is tried at once. */
export async function releaseOutboxRows(db: Db, now: number): Promise<void> {
  await db.updateTable('webhook_outbox').set({ next_attempt_at: now }).where('next_attempt_at', '>', now).execute();
}

/** Deletes rows for URLs no longer configured; answers how many. */
export async function deleteOutboxRowsNotFor(db: Db, urls: readonly string[]): Promise<number> {
  let query = db.deleteFrom('webhook_outbox');
  if (urls.length > 0) query = query.where('url', 'not in', [...urls]);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}
