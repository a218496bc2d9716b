/**
 * --revert-bytes-per-tenant (CONTRACT.md §21, issue 39 item 6), through the real server on SQLite
 * and PostgreSQL: revert content is stored as bytes, the tenant keeps at most the bound, and past
 * it the oldest turns' content goes first, which then answer 409 revert_unavailable. Migration
 * 0014 turns the base64 rows of 0009 into bytes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration } from 'kysely';
import { BACKENDS, createBackend, type TestBackend } from '../support/backends.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';
import { migrationProvider } from '../../src/store/migrations.ts';

const BOUND = 300;
const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

async function turnOf(harness: FakeServerHarness, sessionId: string, command: string): Promise<string> {
  harness.fake.enqueue({ kind: 'reply', toolCalls: [shell('call_write', command)] }, { kind: 'reply', text: 'done' });
  const turn = await harness.submit(sessionId, command);
  assert.equal((await waitForTurn(harness.server, turn.id)).status, 'completed');
  return turn.id;
}

/** The stored revert contents: each row's declared size, its stored type and length. */
async function storedContents(backend: TestBackend): Promise<Array<{ size: number; type: string; length: number }>> {
  if (backend.kind === 'sqlite') {
    const file = new Sqlite(join(backend.stateDir, 'agentd.sqlite'), { readonly: true });
    try {
      return file.prepare('select size, typeof(content) as type, length(content) as length from revert_contents order by size').all() as any;
    } finally {
      file.close();
    }
  }
  const client = new pg.Client({ connectionString: backend.databaseUrl! });
  await client.connect();
  try {
    const { rows } = await client.query('select size::int as size, pg_typeof(content)::text as type, octet_length(content) as length from revert_contents order by size');
    return rows;
  } finally {
    await client.end();
  }
}

for (const backend of BACKENDS) {
  describe(`revert content bounded per tenant on ${backend}`, () => {
    const harness = useFakeServer({ backend, args: ['--yolo', '--revert-bytes-per-tenant', String(BOUND)] });

    it(`keeps the content of turns up to ${BOUND} bytes, as bytes; one byte past it the oldest turn gives its content up (409 revert_unavailable)`, async () => {
      const { server } = harness;
      const cwd = join(server.workspace, 'bounded');
      mkdirSync(cwd);
      // 100 + 200 bytes of earlier contents: exactly the bound
      writeFileSync(join(cwd, 'a.bin'), Buffer.alloc(100, 0xa1));
      writeFileSync(join(cwd, 'b.bin'), Buffer.alloc(200, 0xb2));
      writeFileSync(join(cwd, 'c.txt'), 'c');
      const session = await harness.newSession({ cwd });
      const first = await turnOf(harness, session.id, 'printf x > a.bin');
      const second = await turnOf(harness, session.id, 'printf y > b.bin');
      assert.deepEqual(await storedContents(harness.server.backend), [
        { size: 100, type: backend === 'sqlite' ? 'blob' : 'bytea', length: 100 },
        { size: 200, type: backend === 'sqlite' ? 'blob' : 'bytea', length: 200 },
      ]);
      // at the bound: both kept; the first is revertable (checked last, after the bound is passed)
      const third = await turnOf(harness, session.id, 'printf z > c.txt'); // one byte more: 301
      assert.deepEqual((await storedContents(harness.server.backend)).map((row) => row.size), [1, 200], 'the oldest turn\'s 100 bytes went');
      const dropped = await server.request('POST', `/v1/turns/${first}/revert`);
      assert.equal(dropped.status, 409);
      assert.equal(dropped.json.error.code, 'revert_unavailable');
      assert.match(dropped.json.error.message, /--revert-bytes-per-tenant \(300 bytes\)/);
      assert.equal(readFileSync(join(cwd, 'a.bin'), 'utf8'), 'x', 'nothing written back');
      for (const [turn, file, bytes] of [[third, 'c.txt', Buffer.from('c')], [second, 'b.bin', Buffer.alloc(200, 0xb2)]] as const) {
        const reverted = await server.request('POST', `/v1/turns/${turn}/revert`);
        assert.equal(reverted.status, 200, JSON.stringify(reverted.json));
        assert.deepEqual(readFileSync(join(cwd, file)), bytes);
      }
    });
  });
}

for (const kind of BACKENDS) {
  it(`migration 0014 turns the base64 revert content of 0009 into bytes on ${kind}`, async () => {
    const backend = await createBackend(kind);
    mkdirSync(backend.stateDir, { recursive: true });
    const pool = kind === 'postgres' ? new pg.Pool({ connectionString: backend.databaseUrl! }) : null;
    const db = new Kysely<any>({ dialect: pool ? new PostgresDialect({ pool }) : new SqliteDialect({ database: new Sqlite(join(backend.stateDir, 'agentd.sqlite')) }) });
    try {
      const all = await migrationProvider.getMigrations();
      const before: Record<string, Migration> = Object.fromEntries(Object.entries(all).filter(([name]) => name !== '0014_revert_content_bytes'));
      await new Migrator({ db, provider: { getMigrations: async () => before }, allowUnorderedMigrations: true }).migrateToLatest();
      const bytes = Buffer.from([0, 255, 1, 254, 10, 13]);
      await db.insertInto('revert_contents').values([{ hash: 'h1', content: bytes.toString('base64') }, { hash: 'h2', content: '' }]).execute();
      const migrated = await new Migrator({ db, provider: migrationProvider, allowUnorderedMigrations: true }).migrateToLatest();
      assert.equal(migrated.error, undefined);
      const rows = await db.selectFrom('revert_contents').select(['hash', 'size', 'content']).orderBy('hash').execute();
      assert.deepEqual(rows.map((row) => [row.hash, Number(row.size), Buffer.from(row.content)]), [['h1', 6, bytes], ['h2', 0, Buffer.alloc(0)]]);
    } finally {
      await db.destroy();
      await backend.drop();
    }
  });
}
