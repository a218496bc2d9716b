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

/** Rows due at `now`, the longest-waiting first. */
export async function dueOutboxRows(db: Db, now: number, limit: number): Promise<OutboxRow[]> {
  return db.selectFrom('webhook_outbox').selectAll().where('next_attempt_at', '<=', now).orderBy('next_attempt_at').orderBy('id').limit(limit).execute();
}

/** When the next row falls due, or null with none owed. */
export async function nextOutboxDue(db: Db): Promise<number | null> {
  const row = await db.selectFrom('webhook_outbox').select((eb) => eb.fn.min('next_attempt_at').as('due')).executeTakeFirst();
  return row?.due === null || row?.due === undefined ? null : Number(row.due);
}

/** Takes the row for one attempt, until `until`; false when another claim (or instance) got it first. */
export async function claimOutboxRow(db: Db, row: OutboxRow, until: number): Promise<boolean> {
  const result = await db
    .updateTable('webhook_outbox')
    .set({ next_attempt_at: until })
    .where('id', '=', row.id)
    .where('next_attempt_at', '=', row.next_attempt_at)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
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
