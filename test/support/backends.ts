import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type BackendKind = 'sqlite' | 'postgres';
export const BACKENDS: BackendKind[] = ['sqlite', 'postgres'];

/** The PostgreSQL server the tests create their databases on (trust auth on loopback by default). */
export const POSTGRES_ADMIN_URL = process.env.AGENTD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestBackend {
  kind: BackendKind;
  stateDir: string;
  databaseUrl: string | null;
  drop(): Promise<void>;
}

/** A fresh SQLite state dir, or a fresh PostgreSQL database created for this test and dropped after. */
export async function createBackend(kind: BackendKind): Promise<TestBackend> {
  const stateDir = mkdtempSync(join(tmpdir(), 'agentd-test-'));
  if (kind === 'sqlite') {
    return { kind, stateDir, databaseUrl: null, drop: async () => rmSync(stateDir, { recursive: true, force: true }) };
  }
  const name = `agentd_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    kind,
    stateDir,
    databaseUrl: url.toString(),
    drop: async () => {
      await adminQuery(`drop database if exists ${name} with (force)`);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
