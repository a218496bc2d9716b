import { PostgresAdapter, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { clusterAdmissionMigration } from './cluster-admission.ts';

/** Versioned migrations, applied at start-up. Append only: never edit a released migration. */
const MIGRATIONS: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('sessions')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('boundary_id', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text', (column) => column.notNull())
        .addColumn('provider', 'text', (column) => column.notNull())
        .addColumn('connection', 'text', (column) => column.notNull())
        .addColumn('model', 'text', (column) => column.notNull())
        .addColumn('transport_model', 'text')
        .addColumn('dialect', 'text', (column) => column.notNull())
        .addColumn('cwd', 'text', (column) => column.notNull())
        .addColumn('effort', 'text', (column) => column.notNull())
        .addColumn('title', 'text', (column) => column.notNull())
        .addColumn('title_is_manual', 'integer', (column) => column.notNull())
        .addColumn('archived', 'integer', (column) => column.notNull())
        .addColumn('usage_input', 'bigint', (column) => column.notNull())
        .addColumn('usage_output', 'bigint', (column) => column.notNull())
        .addColumn('usage_cached', 'bigint', (column) => column.notNull())
        .addColumn('repository_url', 'text')
        .addColumn('repository_ref', 'text')
        .addColumn('owns_checkout', 'integer', (column) => column.notNull())
        .addColumn('plan_mode', 'integer', (column) => column.notNull())
        .addColumn('allowances', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex('sessions_listing')
        .on('sessions')
        .columns(['boundary_id', 'archived', 'updated_at', 'id'])
        .execute();

      await db.schema
        .createTable('turns')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('boundary_id', 'text', (column) => column.notNull())
        .addColumn('session_id', 'text', (column) => column.notNull())
        .addColumn('client_request_id', 'text', (column) => column.notNull())
        .addColumn('input_digest', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .addColumn('error', 'text')
        .addColumn('input', 'text', (column) => column.notNull())
        .addColumn('user_text', 'text', (column) => column.notNull())
        .addColumn('output', 'text')
        .addUniqueConstraint('turns_idempotency', ['session_id', 'client_request_id'])
        .execute();
      await db.schema.createIndex('turns_by_boundary').on('turns').columns(['boundary_id', 'created_at']).execute();
      await db.schema.createIndex('turns_by_status').on('turns').columns(['status']).execute();

      await db.schema
        .createTable('history_turns')
        .addColumn('session_id', 'text', (column) => column.notNull())
        .addColumn('idx', 'integer', (column) => column.notNull())
        .addColumn('turn_id', 'text')
        .addColumn('at', 'text', (column) => column.notNull())
        .addColumn('user_text', 'text', (column) => column.notNull())
        .addColumn('assistant_text', 'text')
        .addColumn('error', 'text')
        .addColumn('response_id', 'text')
        .addColumn('effect', 'text', (column) => column.notNull())
        .addColumn('items', 'text', (column) => column.notNull())
        .addColumn('display_items', 'text', (column) => column.notNull())
        .addColumn('usage', 'text')
        .addColumn('provider_telemetry', 'text')
        .addPrimaryKeyConstraint('history_turns_pk', ['session_id', 'idx'])
        .execute();

      await db.schema
        .createTable('boundaries')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('event_id_ceiling', 'bigint', (column) => column.notNull())
        .execute();
    },
  },
  /*
   * Lets the newest `reset` (generationStart) and `replace` entry be found by an index seek.
   * Without it the database walks the session's entries backwards until it meets one, which
   * grows with the session.
   */
  '0002_history_context_starts': {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('history_turns_context_starts').on('history_turns').columns(['session_id', 'effect', 'idx']).execute();
    },
  },
  /*
   * Fenced turn ownership (CONTRACT.md §18): `attempt` is the turn's attempt (the fence); the lease
   * columns are written only by instances of a cluster (docs/CLUSTER.md).
   */
  '0003_turn_leases': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('turns').addColumn('attempt', 'integer', (column) => column.notNull().defaultTo(1)).execute();
      await db.schema.alterTable('turns').addColumn('lease_owner', 'text').execute();
      await db.schema.alterTable('turns').addColumn('lease_expires_at', 'bigint').execute();
    },
  },
  /*
   * The session's `spent` dollars and `context` (CONTRACT.md §19), kept up to date by the turn's
   * end statement so that reading a session never sums its turns. Tokens spent are the usage
   * columns already there.
   */
  '0004_session_spent_context': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('sessions').addColumn('spent_cost_usd', 'double precision').execute();
      await db.schema.alterTable('sessions').addColumn('context_used_tokens', 'bigint', (column) => column.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('sessions').addColumn('context_window', 'bigint').execute();
    },
  },
  /*
   * Cancel and resolve from any instance of a cluster (CONTRACT.md §18, docs/CLUSTER.md): a cancel
   * asked on an instance that does not run the turn is a mark on its row, and human requests are
   * rows every instance lists and answers; the owner polls both for the turns it holds.
   */
  '0005_cluster_signals': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('turns').addColumn('cancel_requested_at', 'text').execute();
      await db.schema
        .createTable('human_requests')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('boundary_id', 'text', (column) => column.notNull())
        .addColumn('turn_id', 'text', (column) => column.notNull())
        .addColumn('session_id', 'text', (column) => column.notNull())
        .addColumn('agent_id', 'text')
        .addColumn('kind', 'text', (column) => column.notNull())
        .addColumn('prompt', 'text', (column) => column.notNull())
        .addColumn('options', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('decision', 'text')
        .addColumn('value', 'text')
        .execute();
      await db.schema.createIndex('human_requests_turn').on('human_requests').columns(['turn_id', 'status']).execute();
    },
  },
  /** Budgets that ask (CONTRACT.md §19): a session's limits of `spent`, null where it has none. */
  '0006_session_budgets': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('sessions').addColumn('budget_tokens', 'bigint').execute();
      await db.schema.alterTable('sessions').addColumn('budget_cost_usd', 'double precision').execute();
    },
  },
  /*
   * A turn's change receipt (CONTRACT.md §20) on its history entry: JSON {changes, changesTruncated},
   * null for entries written before receipts and for entries no turn owns.
   */
  '0007_history_changes': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('history_turns').addColumn('changes', 'text').execute();
    },
  },
  /*
   * One event stream across the instances of a cluster (CONTRACT.md §18, docs/CLUSTER.md): every
   * event of a boundary is a row, numbered from `boundaries.event_id_ceiling` under that row's lock
   * in the writing transaction; the newest `--event-replay-limit` of them are kept for replay.
   */
  '0010_cluster_events': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('events')
        .addColumn('boundary_id', 'text', (column) => column.notNull())
        .addColumn('id', 'bigint', (column) => column.notNull())
        .addColumn('type', 'text', (column) => column.notNull())
        .addColumn('session_id', 'text')
        .addColumn('turn_id', 'text')
        .addColumn('at', 'text', (column) => column.notNull())
        .addColumn('data', 'text', (column) => column.notNull())
        .addPrimaryKeyConstraint('events_pk', ['boundary_id', 'id'])
        .execute();
    },
  },
  /*
   * The agents view of a cluster's turns (CONTRACT.md §13, §18): the owner stores the view of a
   * turn's child agents as it changes, under the turn's attempt (the fence), so every instance answers
   * GET /v1/turns/:id/agents. Apart from `turns`, whose reads should not carry it.
   */
  '0010_cluster_events_agents': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('turn_agents')
        .addColumn('turn_id', 'text', (column) => column.primaryKey())
        .addColumn('view', 'text', (column) => column.notNull())
        .execute();
    },
  },
  /*
   * The durable steps of a cluster's active turns (CONTRACT.md §18, docs/CLUSTER.md "Takeover and
   * resume"): each model response and each batch of tool results, in order, written under the
   * turn's attempt (the fence) as the turn goes, so that another instance can resume it. Deleted once
   * the turn has ended; written only by instances of a cluster.
   */
  '0011_turn_steps': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('turn_steps')
        .addColumn('turn_id', 'text', (column) => column.notNull())
        .addColumn('seq', 'integer', (column) => column.notNull())
        .addColumn('attempt', 'integer', (column) => column.notNull())
        .addColumn('items', 'text', (column) => column.notNull())
        .addColumn('model_step', 'text')
        .addPrimaryKeyConstraint('turn_steps_pk', ['turn_id', 'seq'])
        .execute();
    },
  },
  /*
   * Steering from any instance of a cluster (CONTRACT.md §18–§19, docs/CLUSTER.md): a steer is a
   * row naming the session's active turn; the turn's owner claims it under the turn's attempt,
   * gives it to the turn (or refuses it, the turn ending) and says which; the instance that took
   * the request waits for that. Kept after the decision (without its text) for clientRequestId.
   */
  '0012_turn_steers': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('turn_steers')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('session_id', 'text', (column) => column.notNull())
        .addColumn('turn_id', 'text', (column) => column.notNull())
        .addColumn('client_request_id', 'text')
        .addColumn('input_digest', 'text', (column) => column.notNull())
        .addColumn('input', 'text', (column) => column.notNull())
        .addColumn('item', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('claimed_attempt', 'integer')
        .execute();
      await db.schema.createIndex('turn_steers_turn').on('turn_steers').columns(['turn_id', 'status']).execute();
      await db.schema.createIndex('turn_steers_client_request').on('turn_steers').columns(['session_id', 'client_request_id']).unique().execute();
    },
  },
  /*
   * A queued turn of a cluster may be started by whichever instance has a free running slot
   * (docs/CLUSTER.md "Queued turns start where there is room"): `movable` is 1 for a turn that
   * another instance can start from its row alone, 0 for one whose images or files live only in
   * the memory of the instance that admitted it.
   */
  '0012_turns_movable': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('turns').addColumn('movable', 'integer', (column) => column.notNull().defaultTo(0)).execute();
    },
  },
  /*
   * A cluster's turn keeps its change receipt across a takeover (docs/CLUSTER.md "Takeover and
   * resume"): each step of tool results carries the receipt as it stood then (JSON of the files'
   * states before the turn and after the batch), from which the next owner's receipt goes on.
   */
  '0012_turn_step_receipts': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('turn_steps').addColumn('receipt', 'text').execute();
    },
  },
  /* A cluster's turn admission in one statement, so that no lock waits on a client (cluster-admission.ts). */
  '0013_cluster_admission': clusterAdmissionMigration,
  /*
   * The webhook outbox (CONTRACT.md §20, docs/WEBHOOKS.md): one row per delivery still owed (an
   * event for one URL), written in the transaction that stores what the event announces and
   * deleted once delivered or dropped. `body` is the exact JSON signed and sent, so every retry
   * sends the same bytes; times are epoch milliseconds.
   */
  '0008_webhook_outbox': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_outbox')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('event_id', 'text', (column) => column.notNull())
        .addColumn('url', 'text', (column) => column.notNull())
        .addColumn('event_type', 'text', (column) => column.notNull())
        .addColumn('body', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('next_attempt_at', 'bigint', (column) => column.notNull())
        .addColumn('attempts', 'integer', (column) => column.notNull())
        .execute();
      await db.schema.createIndex('webhook_outbox_due').on('webhook_outbox').columns(['next_attempt_at']).execute();
    },
  },
  /*
   * Reverting a turn (CONTRACT.md §20): per turn its revert entries (JSON RevertEntry[]) and status
   * (available | unavailable | reverted, with the reason when unavailable); the before-bytes once
   * per sha256 (base64 text, alike on both engines) and which turns use which.
   */
  '0009_turn_reverts': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('turn_reverts')
        .addColumn('turn_id', 'text', (column) => column.primaryKey())
        .addColumn('boundary_id', 'text', (column) => column.notNull())
        .addColumn('session_id', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('reason', 'text')
        .addColumn('entries', 'text', (column) => column.notNull())
        .execute();
      await db.schema.createIndex('turn_reverts_session').on('turn_reverts').columns(['session_id', 'created_at']).execute();
      await db.schema
        .createTable('revert_contents')
        .addColumn('hash', 'text', (column) => column.primaryKey())
        .addColumn('content', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('turn_revert_contents')
        .addColumn('turn_id', 'text', (column) => column.notNull())
        .addColumn('hash', 'text', (column) => column.notNull())
        .addPrimaryKeyConstraint('turn_revert_contents_key', ['turn_id', 'hash'])
        .execute();
      await db.schema.createIndex('turn_revert_contents_hash').on('turn_revert_contents').columns(['hash']).execute();
    },
  },
  /*
   * Structured results (CONTRACT.md §22): a turn's outputSchema (its JSON text, null without one),
   * kept with the turn so that any instance of a cluster can run or resume it, and the parsed
   * result on the turn's history entry (JSON, null for turns without a schema).
   */
  '0013_structured_results': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('turns').addColumn('output_schema', 'text').execute();
      await db.schema.alterTable('history_turns').addColumn('result', 'text').execute();
    },
  },
  /*
   * Revert content as bytes (CONTRACT.md §21): the before-bytes of 0009 move from base64 text to a
   * binary column (bytea, or a SQLite blob) with their length beside them, which the per-tenant
   * bound (--revert-bytes-per-tenant) sums. Rows are copied in batches, decoded once here.
   */
  '0014_revert_content_bytes': {
    async up(db: Kysely<any>) {
      const binary = db.getExecutor().adapter instanceof PostgresAdapter ? 'bytea' : 'blob';
      await db.schema
        .createTable('revert_content_bytes')
        .addColumn('hash', 'text', (column) => column.primaryKey())
        .addColumn('size', 'bigint', (column) => column.notNull())
        .addColumn('content', binary, (column) => column.notNull())
        .execute();
      let after = '';
      for (;;) {
        const rows: { hash: string; content: string }[] = await db.selectFrom('revert_contents').select(['hash', 'content']).where('hash', '>', after).orderBy('hash').limit(100).execute();
        if (rows.length === 0) break;
        const values = rows.map((row) => ({ hash: row.hash, content: Buffer.from(row.content, 'base64') }));
        await db.insertInto('revert_content_bytes').values(values.map(({ hash, content }) => ({ hash, size: content.length, content }))).execute();
        after = rows.at(-1)!.hash;
      }
      await db.schema.dropTable('revert_contents').execute();
      await db.schema.alterTable('revert_content_bytes').renameTo('revert_contents').execute();
    },
  },
  /*
   * A bound on takeovers (docs/CLUSTER.md, "A turn that crashes its instances"): how many times a
   * turn was taken over after its lease ran out, so that one which kills every instance running it
   * ends after --max-turn-takeovers instead of going round the cluster for ever.
   */
  '0015_turn_takeovers': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('turns').addColumn('takeovers', 'integer', (column) => column.notNull().defaultTo(0)).execute();
    },
  },
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return MIGRATIONS;
  },
};
