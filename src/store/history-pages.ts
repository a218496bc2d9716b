import { sql, type Kysely, type Migration } from 'kysely';
import type { Db } from './database.ts';
import { fromRow, insertHistoryTurn, type HistoryTurnRecord, type HistoryUsage } from './history.ts';
import { insertSession, type SessionRecord } from './sessions.ts';

/*
 * History queries for pages, forks and compaction. Every query seeks the primary key
 * (session_id, idx), so its cost follows the page size, not the length of the session.
 */

/** Up to `limit` turns with index below `below`, oldest first (a backward keyset seek). */
export async function readHistoryBelow(db: Db, sessionId: string, below: number, limit: number): Promise<HistoryTurnRecord[]> {
  if (below <= 0 || limit <= 0) return [];
  const rows = await db
    .selectFrom('history_turns')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('idx', '<', below)
    .orderBy('idx', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse().map(fromRow);
}

/**
 * Creates a forked session and copies the parent's turns 0..through (inclusive) under the same
 * indices, all in one transaction. Rows are copied inside the database, never decoded.
 */
export async function insertForkedSession(db: Db, boundaryId: string, child: SessionRecord, parentId: string, through: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await insertSession(trx, boundaryId, child);
    await trx
      .insertInto('history_turns')
      .columns(['session_id', 'idx', 'turn_id', 'at', 'user_text', 'assistant_text', 'error', 'response_id', 'effect', 'items', 'display_items', 'usage', 'provider_telemetry'])
      .expression((eb) =>
        eb
          .selectFrom('history_turns')
          .select([
            sql<string>`cast(${child.id} as text)`.as('session_id'),
            'idx', 'turn_id', 'at', 'user_text', 'assistant_text', 'error', 'response_id', 'effect', 'items', 'display_items', 'usage', 'provider_telemetry',
          ])
          .where('session_id', '=', parentId)
          .where('idx', '<=', through),
      )
      .execute();
  });
}

/**
 * Appends a history turn written outside a turn's finalisation (an automatic compaction) and adds
 * its usage to the session's counters, in one transaction.
 */
export async function appendHistoryTurnWithUsage(db: Db, sessionId: string, turn: HistoryTurnRecord, usage: HistoryUsage | null): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await insertHistoryTurn(trx, sessionId, turn);
    if (!usage) return;
    await trx
      .updateTable('sessions')
      .set((eb) => ({
        usage_input: eb('usage_input', '+', usage.input),
        usage_output: eb('usage_output', '+', usage.output),
        usage_cached: eb('usage_cached', '+', usage.cached),
      }))
      .where('id', '=', sessionId)
      .execute();
  });
}

/**
 * Proposed migration `0002_history_context_starts` (migrations.ts is not ours to edit): lets the
 * newest `reset` (generationStart) and `replace` turn be found by an index seek. Without it the
 * database walks the session's turns backwards until it meets one, which grows with the session.
 */
export const historyContextStartsMigration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('history_turns_context_starts').on('history_turns').columns(['session_id', 'effect', 'idx']).execute();
  },
};
