import { sql } from 'kysely';
import { inTransaction, type Db } from './database.ts';
import { insertSession, writingSessionRows } from './sessions.ts';
import { type SessionRecord } from '../domain/session.ts';

const HISTORY_COLUMNS = ['idx', 'turn_id', 'at', 'user_text', 'assistant_text', 'error', 'response_id', 'effect', 'items', 'display_items', 'usage', 'provider_telemetry', 'changes', 'result'] as const;

/**
 * Creates a forked session and copies the parent's history entries 0..through (inclusive) under
 * the same indices, all in one transaction. Rows are copied inside the database, never decoded.
 */
export async function insertForkedSession(db: Db, boundaryId: string, child: SessionRecord, parentId: string, through: number): Promise<void> {
  await writingSessionRows(db, inTransaction(db, async (trx) => {
    await insertSession(trx, boundaryId, child);
    await trx
      .insertInto('history_turns')
      .columns(['session_id', ...HISTORY_COLUMNS])
      .expression((eb) =>
        eb
          .selectFrom('history_turns')
          .select([sql<string>`cast(${child.id} as text)`.as('session_id'), ...HISTORY_COLUMNS])
          .where('session_id', '=', parentId)
          .where('idx', '<=', through),
      )
      .execute();
  }));
}
