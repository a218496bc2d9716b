import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { POSTGRES_ADMIN_URL } from '../support/backends.ts';
import { query, scratchCluster, urlFor } from './support/scratch-cluster.ts';
import { provisionTenants, tenantDatabaseName, tenantRoleName, TENANT_STATEMENT_TIMEOUT, type ProvisionedTenant } from '../../src/tenancy/provision.ts';
import { scramSha256Verifier } from '../../src/tenancy/db-password.ts';

const CHILD = new URL('./support/provision-child.ts', import.meta.url).pathname;

/** Everything provisioning decides about a tenant, read back from the catalogs as the superuser. */
async function catalogState(tenant: ProvisionedTenant, adminDatabase: string) {
  const [role] = await query(
    `select r.rolcanlogin, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolinherit, r.rolreplication, r.rolbypassrls, r.rolconfig, a.rolpassword, r.oid::text
       from pg_roles r join pg_authid a on a.oid = r.oid where r.rolname = $1`,
    [tenant.role],
  );
  const [database] = await query(
    `select datacl::text, pg_get_userbyid(datdba) as owner,
            has_database_privilege('public', datname, 'CONNECT') as public_connect,
            has_database_privilege($2, datname, 'CONNECT') as role_connect,
            has_database_privilege($2, $3, 'CONNECT') as role_connect_admin_database
       from pg_database where datname = $1`,
    [tenant.database, tenant.role, adminDatabase],
  );
  const [schema] = await query(`select nspacl::text, nspowner::regrole::text as owner from pg_namespace where nspname = 'public'`, [], urlFor('postgres', tenant.database));
  const migrations = await query('select name from kysely_migration order by name', [], urlFor('postgres', tenant.database));
  return { role, database, schema, migrations: migrations.map((row) => row.name) };
}

async function connectionRefusal(url: string): Promise<string> {
  try {
    await query('select 1', [], url);
  } catch (error) {
    return (error as Error).message;
  }
  return 'connected';
}

describe('per-tenant PostgreSQL provisioning', () => {
  const cluster = scratchCluster();
  before(() => cluster.create());
  after(() => cluster.drop());

  it('creates a restricted role and a private database per tenant, migrated by that role, and a second run changes nothing', async () => {
    const tenants = cluster.newTenants(2);
    const first = await provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: cluster.stateRoot, tenants });
    assert.deepEqual(first.map((tenant) => tenant.tenantId), tenants.map((tenant) => tenant.id));

    for (const tenant of first) {
      const hex = tenant.tenantId.replaceAll('-', '');
      assert.equal(tenant.database, `agentd_t_${hex}`);
      assert.equal(tenant.role, `agentd_rt_${hex}`);
      const state = await catalogState(tenant, cluster.adminDatabase);
      assert.deepEqual(
        { ...state.role, rolconfig: undefined, rolpassword: undefined, oid: undefined },
        { rolcanlogin: true, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolinherit: false, rolreplication: false, rolbypassrls: false, rolconfig: undefined, rolpassword: undefined, oid: undefined },
      );
      assert.deepEqual(state.role.rolconfig, [`statement_timeout=${TENANT_STATEMENT_TIMEOUT}`]);
      assert.equal(state.database.public_connect, false, 'CONNECT revoked from PUBLIC');
      assert.equal(state.database.role_connect, true);
      assert.equal(state.database.role_connect_admin_database, false);
      assert.equal(state.database.owner, cluster.adminRole, 'the tenant role cannot reopen or drop its database');
      assert.ok(state.migrations.length > 0);

      // the password lives in the tenant state dir, private, and PostgreSQL holds its SCRAM verifier only
      const passwordFile = join(cluster.stateRoot, tenant.tenantId, 'db-password');
      assert.equal(statSync(passwordFile).mode & 0o777, 0o600);
      const password = readFileSync(passwordFile, 'utf8').trim();
      const url = new URL(tenant.databaseUrl);
      assert.deepEqual([url.username, decodeURIComponent(url.password), url.pathname, url.host], [tenant.role, password, `/${tenant.database}`, new URL(POSTGRES_ADMIN_URL).host]);
      const [, iterations, salt] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$/.exec(state.role.rolpassword)!;
      assert.equal(state.role.rolpassword, scramSha256Verifier(password, Buffer.from(salt, 'base64'), Number(iterations)), 'a password auth would accept it');

      // as the tenant role: agentd's tables are its own, readable and writable; its statements time out
      const [owner] = await query(`select tableowner from pg_tables where schemaname = 'public' and tablename = 'sessions'`, [], tenant.databaseUrl);
      assert.equal(owner.tableowner, tenant.role);
      await query(`insert into kysely_migration_lock (id, is_locked) values ('probe', 0)`, [], tenant.databaseUrl);
      assert.equal((await query(`select count(*)::int as n from kysely_migration_lock where id = 'probe'`, [], tenant.databaseUrl))[0].n, 1);
      assert.equal((await query('show statement_timeout', [], tenant.databaseUrl))[0].statement_timeout, TENANT_STATEMENT_TIMEOUT);
    }

    const before = await Promise.all(first.map((tenant) => catalogState(tenant, cluster.adminDatabase)));
    const passwords = first.map((tenant) => readFileSync(join(cluster.stateRoot, tenant.tenantId, 'db-password'), 'utf8'));
    const second = await provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: cluster.stateRoot, tenants });
    assert.deepEqual(second, first);
    assert.deepEqual(await Promise.all(first.map((tenant) => catalogState(tenant, cluster.adminDatabase))), before);
    assert.deepEqual(first.map((tenant) => readFileSync(join(cluster.stateRoot, tenant.tenantId, 'db-password'), 'utf8')), passwords);
  });

  it('refuses a tenant role everywhere but its own database, even with a valid password', async () => {
    const [a, b] = await provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: cluster.stateRoot, tenants: cluster.newTenants(2) });
    const aPassword = decodeURIComponent(new URL(a.databaseUrl).password);
    assert.match(await connectionRefusal(urlFor(a.role, b.database, aPassword)), /permission denied for database/);
    assert.match(await connectionRefusal(urlFor(a.role, cluster.adminDatabase, aPassword)), /permission denied for database/);
    // inside its own database it cannot grow its powers
    const escape = `agentd_escape_${randomBytes(3).toString('hex')}`;
    const attempts = [`create database ${escape}`, `create role ${escape}`, 'alter role current_user superuser', 'alter role current_user createdb', `set role ${cluster.adminRole}`];
    for (const attempt of attempts) {
      await assert.rejects(query(attempt, [], a.databaseUrl), /permission denied|must be|must have/, attempt);
    }
    // a grant it may not make is only a warning: what matters is that nothing changed
    await query(`grant connect on database ${a.database} to public`, [], a.databaseUrl).catch(() => {});
    await query(`grant connect on database ${a.database} to ${b.role}`, [], a.databaseUrl).catch(() => {});
    assert.equal((await query(`select has_database_privilege('public', $1, 'CONNECT') as open`, [a.database]))[0].open, false);
    assert.equal((await query(`select has_database_privilege($2, $1, 'CONNECT') as open`, [a.database, b.role]))[0].open, false);
    assert.equal((await query('select count(*)::int as n from pg_database where datname = $1', [escape]))[0].n, 0);
    assert.equal((await query('select count(*)::int as n from pg_roles where rolname = $1', [escape]))[0].n, 0);
  });

  it('lets two provisioners race: both succeed, with one database and one role per tenant', async () => {
    const tenants = cluster.newTenants(3);
    const options = JSON.stringify({ adminUrl: cluster.adminUrl, tenantStateRoot: cluster.stateRoot, tenants });
    const run = () => promisify(execFile)(process.execPath, ['--import', 'tsx', CHILD, options], { timeout: 60000 });
    const [one, two] = await Promise.all([run(), run()]);
    const first = JSON.parse(one.stdout) as ProvisionedTenant[];
    assert.deepEqual(JSON.parse(two.stdout), first, 'the same URLs: one password file per tenant');
    for (const tenant of first) {
      assert.equal((await query('select count(*)::int as n from pg_database where datname = $1', [tenant.database]))[0].n, 1);
      assert.equal((await query('select count(*)::int as n from pg_roles where rolname = $1', [tenant.role]))[0].n, 1);
      assert.equal((await query('select current_user as who', [], tenant.databaseUrl))[0].who, tenant.role);
    }
  });

  it('fails closed when the administrative database cannot be closed to tenant roles', async () => {
    // a database the administrative role does not own, open to PUBLIC by an explicit grant (not by
    // whatever ACL the server's own `postgres` database happens to have): it cannot revoke that
    const notOwnedDatabase = `agentd_test_not_owned_${randomBytes(4).toString('hex')}`;
    await query(`create database ${notOwnedDatabase}`);
    try {
      await query(`grant connect on database ${notOwnedDatabase} to public`);
      await assert.rejects(
        provisionTenants({ adminUrl: urlFor(cluster.adminRole, notOwnedDatabase), tenantStateRoot: cluster.stateRoot, tenants: cluster.newTenants(1) }),
        new RegExp(`tenant roles can connect to the administrative database ${notOwnedDatabase}: make the administrative role its owner, or run REVOKE CONNECT ON DATABASE ${notOwnedDatabase} FROM PUBLIC`),
      );
    } finally {
      await query(`drop database ${notOwnedDatabase} with (force)`);
    }
  });

  it('refuses a tenant id that is not a canonical UUID before touching the server', async () => {
    await assert.rejects(provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: cluster.stateRoot, tenants: [{ id: 'x"; drop database postgres; --' }] }), /is not a canonical UUID/);
  });

  it('with other instances of a cluster connected, never replaces a role\'s password from a tenant state root that lacks it', async () => {
    const tenants = cluster.newTenants(1);
    const [first] = await provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: cluster.stateRoot, tenants });
    // another machine's instance, with a tenant state root of its own
    const otherRoot = mkdtempSync(join(tmpdir(), 'agentd-tenants-other-'));
    await assert.rejects(
      provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: otherRoot, tenants, othersConnect: true }),
      /role agentd_rt_\w+ exists but .*db-password did not; .*Copy db-password \(mode 0600\) from another instance's tenant state root/,
    );
    assert.ok(!existsSync(join(otherRoot, tenants[0].id, 'db-password')), 'no password of its own is left behind');
    assert.equal(await connectionRefusal(first.databaseUrl), 'connected', 'the first instance\'s password still works');
    // with the file copied, it provisions and connects with the same password
    copyFileSync(join(cluster.stateRoot, tenants[0].id, 'db-password'), join(otherRoot, tenants[0].id, 'db-password'));
    const [again] = await provisionTenants({ adminUrl: cluster.adminUrl, tenantStateRoot: otherRoot, tenants, othersConnect: true });
    assert.equal(again.databaseUrl, first.databaseUrl);
  });
});
