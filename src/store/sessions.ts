import { inTransaction, type Db } from './database.ts';
import { forgetSessionReverts } from './turn-reverts.ts';
import { forgetSessionSteers } from './turn-steers.ts';
import type { SessionsTable } from './schema.ts';
import type { Effort } from '../domain/effort.ts';
import type { UsageCounters } from '../domain/usage.ts';
import type { SessionRecord } from '../domain/session.ts';
import { decodeStoredText, encodeStoredText } from './text-codec.ts';
import { preparedQuery, rowParams, type Param, type PreparedQuery } from './prepared-query.ts';
import { sessionRowCache } from './session-row-cache.ts';

export type ArchiveFilter = 'active' | 'archived' | 'all';

export interface SessionCursor {
  updatedAt: string;
  id: string;
}

/** The version of the store's session rows now (SessionRowCache.version). */
export function sessionRowsVersionNow(db: Db): number {
  return sessionRowCache(db).version;
}

/**
 * Runs a write to session rows (a statement, or a transaction holding one), then notes it, also when
 * it failed: a failed commit's outcome is not known here.
 */
export async function writingSessionRows<T>(db: Db, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } finally {
    sessionRowCache(db).noteWritten();
  }
}

/**
 * Runs a whole write of one session's row (a statement outside a transaction, or the transaction
 * holding it) under both caches' watch: the read cache's version moves on, as with
 * writingSessionRows, and the row kept for findSession (session-row-cache.ts) ends, or becomes
 * `rowWritten(result)` when the write read its row back and nothing overlapped it.
 */
export async function writingSessionRow<T>(db: Db, id: string, write: () => Promise<T>, rowWritten: (result: T) => SessionsTable | null = () => null): Promise<T> {
  const cache = sessionRowCache(db);
  const watched = cache.writing(id);
  let result: T;
  try {
    result = await write();
  } catch (error) {
    watched.failed();
    throw error;
  } finally {
    cache.noteWritten();
  }
  watched.committed(rowWritten(result));
  return result;
}

/**
 * Inserts a session row. Outside a transaction, the inserts that arrive in one turn of the event
 * loop go to the database as one statement (group commit): each caller still hears only after
 * its row is committed, and SQLite writes its log once for all of them instead of once each.
 */
export async function insertSession(db: Db, boundaryId: string, session: SessionRecord): Promise<void> {
  const row = toRow(boundaryId, session);
  if (db.isTransaction) return void (await writingSessionRows(db, insertSessionRows(db, [row])));
  return new Promise((resolve, reject) => {
    let batch = pendingInserts.get(db);
    if (batch === undefined) {
      batch = [];
      pendingInserts.set(db, batch);
      setImmediate(() => void insertBatch(db));
    }
    batch.push({ row, resolve, reject });
  });
}

interface PendingInsert {
  row: SessionsTable;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The inserts waiting for the next turn of the event loop, per database. */
const pendingInserts = new WeakMap<Db, PendingInsert[]>();
/** Rows per statement: within both databases' limits on bound parameters. */
const MAXIMUM_ROWS_PER_INSERT = 64;

async function insertBatch(db: Db): Promise<void> {
  const batch = pendingInserts.get(db) ?? [];
  pendingInserts.delete(db);
  for (let start = 0; start < batch.length; start += MAXIMUM_ROWS_PER_INSERT) {
    const group = batch.slice(start, start + MAXIMUM_ROWS_PER_INSERT);
    try {
      await writingSessionRows(db, insertSessionRows(db, group.map((entry) => entry.row)));
      for (const entry of group) entry.resolve();
    } catch (error) {
      if (group.length === 1) group[0].reject(error);
      // One row's fault must not fail the others: each is tried alone and gets its own outcome.
      else for (const entry of group) await insertAlone(db, entry);
    }
  }
}

async function insertAlone(db: Db, entry: PendingInsert): Promise<void> {
  try {
    await writingSessionRows(db, insertSessionRows(db, [entry.row]));
    entry.resolve();
  } catch (error) {
    entry.reject(error);
  }
}

const SESSION_COLUMNS = {
  id: true, boundary_id: true, created_at: true, updated_at: true, provider: true, connection: true, model: true,
  transport_model: true, dialect: true, cwd: true, effort: true, title: true, title_is_manual: true, archived: true,
  usage_input: true, usage_output: true, usage_cached: true, spent_cost_usd: true, context_used_tokens: true, context_window: true, budget_tokens: true, budget_cost_usd: true, repository_url: true, repository_ref: true,
  owns_checkout: true, plan_mode: true, allowances: true,
} as const;

/** The insert of `rows.length` rows, one prepared statement per row count. */
function insertSessionRows(db: Db, rows: SessionsTable[]): Promise<unknown> {
  let insert = sessionInserts.get(rows.length);
  if (insert === undefined) {
    insert = preparedSessionInsert(rows.length);
    sessionInserts.set(rows.length, insert);
  }
  return insert(db, rows);
}

const sessionInserts = new Map<number, PreparedQuery<SessionsTable[], unknown>>();

function preparedSessionInsert(count: number): PreparedQuery<SessionsTable[], unknown> {
  return preparedQuery((db, param: Param<SessionsTable[]>) => {
    const rows = Array.from({ length: count }, (_, index) => {
      const paramOfRow: Param<SessionsTable> = (read) => param((batch) => read(batch[index]));
      return rowParams(paramOfRow, SESSION_COLUMNS);
    });
    return db.insertInto('sessions').values(rows);
  });
}

/** The session, from the store's kept row when it has one (session-row-cache.ts); a transaction reads the table. */
export async function findSession(db: Db, boundaryId: string, id: string): Promise<SessionRecord | null> {
  const cache = db.isTransaction ? null : sessionRowCache(db);
  const kept = cache?.row(boundaryId, id);
  if (kept !== undefined) return fromRow(kept);
  const versionBefore = cache?.version;
  const { rows } = await selectSession(db, { boundaryId, id });
  if (rows.length === 0) return null;
  cache?.keepRead(rows[0], versionBefore!, cache.version);
  return fromRow(rows[0]);
}

const selectSession = preparedQuery((db, param: Param<{ boundaryId: string; id: string }>) =>
  db
    .selectFrom('sessions')
    .selectAll()
    .where('boundary_id', '=', param((values) => values.boundaryId))
    .where('id', '=', param((values) => values.id)),
);

/** Keyset page ordered by updatedAt desc, id desc; stable under concurrent inserts. */
export async function listSessions(
  db: Db,
  boundaryId: string,
  options: { archive: ArchiveFilter; limit: number; after: SessionCursor | null },
): Promise<{ sessions: SessionRecord[]; next: SessionCursor | null }> {
  let query = db.selectFrom('sessions').selectAll().where('boundary_id', '=', boundaryId);
  if (options.archive !== 'all') query = query.where('archived', '=', options.archive === 'archived' ? 1 : 0);
  const after = options.after;
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('updated_at', '<', after.updatedAt), eb.and([eb('updated_at', '=', after.updatedAt), eb('id', '<', after.id)])]),
    );
  }
  const rows = await query.orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(options.limit + 1).execute();
  const sessions = rows.slice(0, options.limit).map(fromRow);
  const last = sessions[sessions.length - 1];
  return { sessions, next: rows.length > options.limit && last ? { updatedAt: last.updatedAt, id: last.id } : null };
}

export async function updateSessionFields(
  db: Db,
  boundaryId: string,
  id: string,
  fields: Partial<Pick<SessionRecord, 'title' | 'titleIsManual' | 'archived' | 'planMode' | 'allowances' | 'updatedAt' | 'ownsCheckout' | 'effort' | 'spentCostUsd' | 'budget'>> & {
    /** the catalog model the session moves to, with the connection it speaks through */
    model?: Pick<SessionRecord, 'provider' | 'connection' | 'model' | 'transportModel' | 'dialect'> & { contextWindow: number | null };
  },
): Promise<void> {
  const row: Partial<SessionsTable> = {};
  if (fields.model !== undefined) {
    const { provider, connection, model, transportModel, dialect, contextWindow } = fields.model;
    Object.assign(row, { provider, connection, model, transport_model: transportModel, dialect, context_window: contextWindow });
  }
  if (fields.effort !== undefined) row.effort = fields.effort;
  if (fields.spentCostUsd !== undefined) row.spent_cost_usd = fields.spentCostUsd;
  if (fields.budget !== undefined) Object.assign(row, { budget_tokens: fields.budget.tokens, budget_cost_usd: fields.budget.costUsd });
  if (fields.title !== undefined) row.title = encodeStoredText(fields.title);
  if (fields.titleIsManual !== undefined) row.title_is_manual = fields.titleIsManual ? 1 : 0;
  if (fields.archived !== undefined) row.archived = fields.archived ? 1 : 0;
  if (fields.planMode !== undefined) row.plan_mode = fields.planMode ? 1 : 0;
  if (fields.allowances !== undefined) row.allowances = JSON.stringify(fields.allowances);
  if (fields.updatedAt !== undefined) row.updated_at = fields.updatedAt;
  if (fields.ownsCheckout !== undefined) row.owns_checkout = fields.ownsCheckout ? 1 : 0;
  await writingSessionRow(db, id, () => db.updateTable('sessions').set(row).where('boundary_id', '=', boundaryId).where('id', '=', id).execute());
}

/** Adds a model's spending to the session's counters (history appends do, with their entry). */
export async function addSessionUsage(db: Db, id: string, usage: UsageCounters): Promise<void> {
  // inside a transaction, whoever opened it watches the row until it commits
  if (!db.isTransaction) return writingSessionRow(db, id, () => addUsageToRow(db, id, usage));
  await addUsageToRow(db, id, usage);
}

async function addUsageToRow(db: Db, id: string, usage: UsageCounters): Promise<void> {
  await writingSessionRows(
    db,
    db
      .updateTable('sessions')
      .set((eb) => ({
        usage_input: eb('usage_input', '+', usage.input),
        usage_output: eb('usage_output', '+', usage.output),
        usage_cached: eb('usage_cached', '+', usage.cached),
      }))
      .where('id', '=', id)
      .execute(),
  );
}

/** The oldest session of the boundary working in `cwd`, if any. */
export async function findSessionByCwd(db: Db, boundaryId: string, cwd: string): Promise<SessionRecord | null> {
  const row = await db.selectFrom('sessions').selectAll().where('boundary_id', '=', boundaryId).where('cwd', '=', cwd).orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();
  return row ? fromRow(row) : null;
}

/** Removes the session with its history and turn records, all or nothing. */
export async function deleteSessionCascade(db: Db, boundaryId: string, id: string): Promise<boolean> {
  return writingSessionRow(db, id, () => inTransaction(db, async (trx) => {
    await trx.deleteFrom('history_turns').where('session_id', '=', id).execute();
    await forgetSessionReverts(trx, id);
    await forgetSessionSteers(trx, id);
    await trx.deleteFrom('turns').where('session_id', '=', id).execute();
    const result = await trx.deleteFrom('sessions').where('boundary_id', '=', boundaryId).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }));
}

export function toRow(boundaryId: string, session: SessionRecord): SessionsTable {
  return {
    id: session.id,
    boundary_id: boundaryId,
    created_at: session.createdAt,
    updated_at: session.updatedAt,
    provider: session.provider,
    connection: session.connection,
    model: session.model,
    transport_model: session.transportModel,
    dialect: session.dialect,
    cwd: session.cwd,
    effort: session.effort,
    title: encodeStoredText(session.title),
    title_is_manual: session.titleIsManual ? 1 : 0,
    archived: session.archived ? 1 : 0,
    usage_input: session.usage.input,
    usage_output: session.usage.output,
    usage_cached: session.usage.cached,
    spent_cost_usd: session.spentCostUsd,
    context_used_tokens: session.context.usedTokens,
    context_window: session.context.window,
    budget_tokens: session.budget.tokens,
    budget_cost_usd: session.budget.costUsd,
    repository_url: session.repository?.url ?? null,
    repository_ref: session.repository?.ref ?? null,
    owns_checkout: session.ownsCheckout ? 1 : 0,
    plan_mode: session.planMode ? 1 : 0,
    allowances: JSON.stringify(session.allowances),
  };
}

export function fromRow(row: SessionsTable): SessionRecord {
  return {
    id: row.id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    provider: row.provider,
    connection: row.connection,
    model: row.model,
    transportModel: row.transport_model,
    dialect: row.dialect,
    cwd: row.cwd,
    effort: row.effort as Effort,
    title: decodeStoredText(row.title),
    titleIsManual: row.title_is_manual === 1,
    archived: row.archived === 1,
    usage: { input: Number(row.usage_input), output: Number(row.usage_output), cached: Number(row.usage_cached) },
    spentCostUsd: row.spent_cost_usd === null ? null : Number(row.spent_cost_usd),
    context: { usedTokens: Number(row.context_used_tokens), window: row.context_window === null ? null : Number(row.context_window) },
    budget: { tokens: row.budget_tokens === null ? null : Number(row.budget_tokens), costUsd: row.budget_cost_usd === null ? null : Number(row.budget_cost_usd) },
    repository: row.repository_url ? { url: row.repository_url, ref: row.repository_ref } : null,
    ownsCheckout: row.owns_checkout === 1,
    planMode: row.plan_mode === 1,
    allowances: JSON.parse(row.allowances) as string[],
  };
}
