import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { POSTGRES_ADMIN_URL } from '../../support/backends.ts';
import { tenantDatabaseName, tenantRoleName } from '../../../src/tenancy/provision.ts';

/** Runs one statement on `url` (the superuser's server by default) and returns the rows. */
export async function query(text: string, values: unknown[] = [], url = POSTGRES_ADMIN_URL): Promise<any[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

export function urlFor(user: string, database: string, password?: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.username = user;
  url.password = password ?? '';
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * A non-superuser administrative role with only CREATEDB and CREATEROLE, owning a database of its
 * own: the least the docs promise is enough. Everything created is dropped afterwards.
 */
export function scratchCluster() {
  const suffix = randomBytes(5).toString('hex');
  const adminRole = `agentd_test_adm_${suffix}`;
  const adminDatabase = `agentd_test_admdb_${suffix}`;
  const tenantIds: string[] = [];
  return {
    adminRole,
    adminDatabase,
    adminUrl: urlFor(adminRole, adminDatabase),
    stateRoot: mkdtempSync(join(tmpdir(), 'agentd-tenants-')),
    newTenants(count: number) {
      const ids = Array.from({ length: count }, () => randomUUID());
      tenantIds.push(...ids);
      return ids.map((id) => ({ id }));
    },
    /** tenants created elsewhere (a registry) whose databases and roles drop() must remove */
    adopt(ids: readonly string[]) {
      tenantIds.push(...ids);
    },
    async create() {
      await query(`create role ${adminRole} login createdb createrole`);
      await query(`create database ${adminDatabase} owner ${adminRole}`);
    },
    async drop() {
      for (const id of tenantIds) await query(`drop database if exists ${tenantDatabaseName(id)} with (force)`);
      for (const id of tenantIds) await query(`drop role if exists ${tenantRoleName(id)}`);
      await query(`drop database if exists ${adminDatabase} with (force)`);
      await query(`drop role if exists ${adminRole}`);
    },
  };
}
