/**
 * Per-tenant PostgreSQL provisioning (CONTRACT.md §11), run through the administrative connection:
 * for each tenant a database `agentd_t_<hex>` and a restricted login role `agentd_rt_<hex>` that
 * alone may connect to it, then agentd's migrations inside it as that role. Every step looks
 * before it acts, so a second run changes nothing; one advisory lock serialises concurrent
 * provisioners, and duplicate errors from a provisioner on another server are taken as "exists".
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { openStore } from '../store/database.ts';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTenantPassword, PASSWORD_FILE_NAME, scramSha256Verifier, tenantStateDir } from './db-password.ts';

export interface ProvisionOptions {
  /** the administrative connection (`--database-url`): CREATEDB and CREATEROLE suffice */
  adminUrl: string;
  tenantStateRoot: string;
  tenants: readonly { id: string }[];
  /**
   * Other instances of a cluster are connected as the tenants' roles: a role's password is never
   * replaced then (that would lock them out). A tenant state root without the password of a role
   * that exists is refused instead: its `db-password` must be copied from another instance's.
   */
  othersConnect?: boolean;
}

export interface ProvisionedTenant {
  tenantId: string;
  database: string;
  role: string;
  /** what the tenant's runtime connects with: its role, its password, its database, the admin URL's host */
  databaseUrl: string;
}

class ProvisioningError extends Error {}

/** A safety net for a runaway query of one tenant; agentd's own statements take milliseconds. */
export const TENANT_STATEMENT_TIMEOUT = '30s';

const ROLE_ATTRIBUTES = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS';

/** The one advisory lock key every agentd provisioner takes: derived from a fixed phrase. */
const PROVISIONING_LOCK_KEY = createHash('sha256').update('agentd tenant provisioning').digest().readBigInt64BE(0).toString();

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function tenantDatabaseName(tenantId: string): string {
  return `agentd_t_${hexOf(tenantId)}`;
}

export function tenantRoleName(tenantId: string): string {
  return `agentd_rt_${hexOf(tenantId)}`;
}

export async function provisionTenants(options: ProvisionOptions): Promise<ProvisionedTenant[]> {
  // Ids become SQL names and directory names: check them all before anything is created.
  for (const tenant of options.tenants) hexOf(tenant.id);
  const admin = await connect(options.adminUrl);
  try {
    await admin.query('select pg_advisory_lock($1)', [PROVISIONING_LOCK_KEY]);
    const provisioned: ProvisionedTenant[] = [];
    for (const tenant of options.tenants) provisioned.push(await provisionTenant(admin, options, tenant.id));
    await closeAdministrativeDatabase(admin, provisioned);
    return provisioned;
  } finally {
    // Ending the session releases the advisory lock too.
    await admin.end().catch(() => {});
  }
}

async function provisionTenant(admin: pg.Client, options: ProvisionOptions, tenantId: string): Promise<ProvisionedTenant> {
  const database = tenantDatabaseName(tenantId);
  const role = tenantRoleName(tenantId);
  const { password, created } = ensureTenantPassword(options.tenantStateRoot, tenantId);
  if (created && options.othersConnect && (await roleExists(admin, role))) {
    const file = join(tenantStateDir(options.tenantStateRoot, tenantId), PASSWORD_FILE_NAME);
    rmSync(file, { force: true });
    throw new ProvisioningError(
      `tenant ${tenantId}: role ${role} exists but ${file} did not; the cluster's other instances connect with the role's password, which a new one would replace. Copy db-password (mode 0600) from another instance's tenant state root, or stop every instance to let this one set a new password`,
    );
  }
  await ensureRole(admin, role, password, created);
  await ensureDatabase(admin, database, role);
  await grantPublicSchema(options.adminUrl, database, role);

  const databaseUrl = new URL(options.adminUrl);
  databaseUrl.username = role;
  databaseUrl.password = password;
  databaseUrl.pathname = `/${database}`;
  const url = databaseUrl.toString();
  // The migrations run as the tenant role, so every table belongs to it.
  const store = await openStore({ databaseUrl: url, stateDir: tenantStateDir(options.tenantStateRoot, tenantId) });
  await store.close();
  return { tenantId, database, role, databaseUrl: url };
}

async function roleExists(admin: pg.Client, role: string): Promise<boolean> {
  return ((await admin.query('select 1 from pg_roles where rolname = $1', [role])).rowCount ?? 0) > 0;
}

async function ensureRole(admin: pg.Client, role: string, password: string, passwordIsNew: boolean): Promise<void> {
  const name = admin.escapeIdentifier(role);
  const verifier = () => admin.escapeLiteral(scramSha256Verifier(password));
  const { rows } = await admin.query(
    `select rolcanlogin and not rolsuper and not rolcreatedb and not rolcreaterole and not rolinherit
            and not rolreplication and not rolbypassrls as restricted
       from pg_roles where rolname = $1`,
    [role],
  );
  const existed = rows.length > 0 || !(await ignoringDuplicates(() => admin.query(`create role ${name} with ${ROLE_ATTRIBUTES} password ${verifier()}`)));
  if (existed) {
    if (!rows[0]?.restricted) await admin.query(`alter role ${name} with ${ROLE_ATTRIBUTES}`);
    if (passwordIsNew) await admin.query(`alter role ${name} with password ${verifier()}`);
  }
  const timeout = await admin.query(
    `select 1 from pg_db_role_setting s join pg_roles r on r.oid = s.setrole
      where r.rolname = $1 and s.setdatabase = 0 and $2 = any(s.setconfig)`,
    [role, `statement_timeout=${TENANT_STATEMENT_TIMEOUT}`],
  );
  if (timeout.rowCount === 0) await admin.query(`alter role ${name} set statement_timeout = ${admin.escapeLiteral(TENANT_STATEMENT_TIMEOUT)}`);
}

async function ensureDatabase(admin: pg.Client, database: string, role: string): Promise<void> {
  const name = admin.escapeIdentifier(database);
  const existing = await admin.query('select 1 from pg_database where datname = $1', [database]);
  // Owned by the administrative role: the tenant role cannot reopen it to others or drop it.
  if (existing.rowCount === 0) await ignoringDuplicates(() => admin.query(`create database ${name}`));
  const connectAllowed = async (grantee: string) =>
    (await admin.query(`select has_database_privilege($1, $2, 'CONNECT') as allowed`, [grantee, database])).rows[0].allowed as boolean;
  // PUBLIC first: while PUBLIC may connect, so may the role without a grant of its own.
  if (await connectAllowed('public')) await admin.query(`revoke connect on database ${name} from public`);
  if (!(await connectAllowed(role))) await admin.query(`grant connect on database ${name} to ${admin.escapeIdentifier(role)}`);
}

/** Since PostgreSQL 15 only the database owner may create in `public`; the tenant role needs to, and nobody else may. */
async function grantPublicSchema(adminUrl: string, database: string, role: string): Promise<void> {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const client = await connect(url.toString());
  try {
    const allowed = async (grantee: string, privilege: string) =>
      (await client.query(`select has_schema_privilege($1, 'public', $2) as allowed`, [grantee, privilege])).rows[0].allowed as boolean;
    if (await allowed('public', 'CREATE')) await client.query('revoke create on schema public from public');
    if (!(await allowed(role, 'USAGE')) || !(await allowed(role, 'CREATE'))) {
      await client.query(`grant usage, create on schema public to ${client.escapeIdentifier(role)}`);
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A tenant role must not reach the administrative database either. PUBLIC keeps CONNECT there by
 * default; only the database's owner (or a superuser) can revoke it, so when that fails the
 * operator is told how to fix it rather than left with a role that reaches it.
 */
async function closeAdministrativeDatabase(admin: pg.Client, tenants: readonly ProvisionedTenant[]): Promise<void> {
  if (tenants.length === 0) return;
  const open = async () =>
    (await admin.query(`select has_database_privilege($1, current_database(), 'CONNECT') as open`, [tenants[0].role])).rows[0].open as boolean;
  if (!(await open())) return;
  const { rows } = await admin.query('select current_database() as name');
  await admin.query(`revoke connect on database ${admin.escapeIdentifier(rows[0].name)} from public`);
  if (await open()) {
    throw new ProvisioningError(
      `tenant roles can connect to the administrative database ${rows[0].name}: make the administrative role its owner, or run REVOKE CONNECT ON DATABASE ${rows[0].name} FROM PUBLIC`,
    );
  }
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  // A server that goes away mid-provisioning fails the pending query; the event must not crash us.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Runs a CREATE; false when another provisioner created the object first. */
async function ignoringDuplicates(create: () => Promise<unknown>): Promise<boolean> {
  try {
    await create();
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // duplicate_object, duplicate_database, or the catalog's unique index hit by a concurrent CREATE
    if (code === '42710' || code === '42P04' || code === '23505') return false;
    throw error;
  }
}

function hexOf(tenantId: string): string {
  if (!CANONICAL_UUID.test(tenantId)) throw new ProvisioningError(`tenant id ${JSON.stringify(tenantId)} is not a canonical UUID`);
  return tenantId.replaceAll('-', '');
}
