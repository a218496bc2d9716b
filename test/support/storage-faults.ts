import { sql } from 'kysely';
import type { Db } from '../../src/store/database.ts';
import type { BackendKind } from './backends.ts';

/**
 * Makes every insert into history_turns fail (a trigger raising "simulated storage failure")
 * until the returned repair drops the trigger: a turn's terminal transaction then rolls back.
 */
export async function breakHistoryInserts(backend: BackendKind, db: Db): Promise<() => Promise<void>> {
  if (backend === 'sqlite') {
    await sql`create trigger fail_history before insert on history_turns begin select raise(abort, 'simulated storage failure'); end`.execute(db);
    return async () => void (await sql`drop trigger fail_history`.execute(db));
  }
  await sql`create or replace function fail_history() returns trigger language plpgsql as $$ begin raise exception 'simulated storage failure'; end $$`.execute(db);
  await sql`create trigger fail_history before insert on history_turns for each row execute function fail_history()`.execute(db);
  return async () => void (await sql`drop trigger fail_history on history_turns`.execute(db));
}
