/**
 * A cluster's turn admission in one statement (docs/CLUSTER.md "Partitions"): the boundary's queue
 * lock, the count of its queued turns, the session's lock, the one-active-turn check, the session's
 * read and the turn's insert with its lease, all in a function the server runs as one autocommitted
 * statement. Its locks are released by the server's own commit, so no round trip to a client that
 * may be cut off comes between taking the queue lock and letting go of it: an instance partitioned
 * mid-admission holds nothing that keeps other instances' admissions waiting. Each statement of a
 * function takes a new snapshot under READ COMMITTED, so the count after the lock sees every
 * admission that held it before. PostgreSQL only: SQLite cannot cluster. Called by
 * store/turn-leases.ts insertLeasedTurn.
 */
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/*
 * The new row is given as JSON and only the columns it names are inserted, so columns added to
 * `turns` later keep their defaults. The one-bigint advisory keys are apart from the database
 * claim's two-integer key (database-claim.ts).
 */
const ADMIT_TURN = `
create or replace function agentd_admit_turn(new_turn jsonb, active_statuses text[], queue_limit integer, lease_owner text, lease_ms bigint)
returns jsonb language plpgsql as $admit$
declare
  queue_full boolean := false;
  found jsonb;
  columns text;
begin
  if queue_limit is not null then
    perform pg_advisory_xact_lock(hashtextextended('agentd queue ' || (new_turn->>'boundary_id'), 0));
    select count(*) >= queue_limit into queue_full from turns where boundary_id = new_turn->>'boundary_id' and status = 'queued';
  end if;
  perform pg_advisory_xact_lock(hashtextextended('agentd session ' || (new_turn->>'session_id'), 0));
  if exists (select 1 from turns where session_id = new_turn->>'session_id' and status = any(active_statuses)) then
    return jsonb_build_object('outcome', 'session_busy');
  end if;
  select to_jsonb(s) into found from sessions s where s.id = new_turn->>'session_id';
  if found is null then
    return jsonb_build_object('outcome', 'session_not_found');
  end if;
  new_turn := new_turn || jsonb_build_object('lease_owner', lease_owner, 'lease_expires_at', (extract(epoch from clock_timestamp()) * 1000)::bigint + lease_ms);
  select string_agg(quote_ident(key), ', ') into columns from jsonb_object_keys(new_turn) as key;
  execute format('insert into turns (%s) select %s from jsonb_populate_record(null::turns, $1)', columns, columns) using new_turn;
  return jsonb_build_object('outcome', case when queue_full then 'stored_queue_full' else 'stored' end, 'session', found);
end
$admit$`;

export const clusterAdmissionMigration: Migration = {
  async up(db: Kysely<any>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    await sql.raw(ADMIT_TURN).execute(db);
  },
};
