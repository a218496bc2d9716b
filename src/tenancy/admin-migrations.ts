/**
 * The administrative (registry) database's own migrations, apart from the tenants' (store/migrations.ts):
 * multi-tenant hosts run them only with --cluster, so a lone host still asks nothing of that
 * database beyond its claim. Their own bookkeeping tables keep them apart from any other schema
 * the operator keeps there. Append only.
 */
import { Migrator, type Kysely, type Migration } from 'kysely';

const MIGRATIONS: Record<string, Migration> = {
  /**
   * Which instance of a cluster holds which tenant's runtime, under a lease it renews
   * (cluster-tenants.ts): the rows of an instance that died or stopped let another open the
   * tenant and take its turns over.
   */
  '0013_cluster_tenants': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('cluster_tenants')
        .addColumn('tenant_id', 'text', (column) => column.notNull())
        .addColumn('instance_id', 'text', (column) => column.notNull())
        .addColumn('lease_expires_at', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('cluster_tenants_key', ['tenant_id', 'instance_id'])
        .execute();
      await db.schema.createIndex('cluster_tenants_by_instance').on('cluster_tenants').columns(['instance_id']).execute();
    },
  },
  /**
   * Each instance's count of turns queued in its scheduler, under a lease it renews
   * (cluster-queue.ts): `--max-queued-turns` counted across the cluster's instances.
   */
  '0013_cluster_tenants_queue': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('cluster_instances')
        .addColumn('instance_id', 'text', (column) => column.primaryKey())
        .addColumn('queued_turns', 'integer', (column) => column.notNull())
        .addColumn('lease_expires_at', 'bigint', (column) => column.notNull())
        .execute();
    },
  },
};

export async function migrateAdministrativeDatabase(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    migrationTableName: 'agentd_admin_migrations',
    migrationLockTableName: 'agentd_admin_migrations_lock',
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}
