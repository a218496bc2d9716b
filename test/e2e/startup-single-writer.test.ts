// CONTRACT.md §18, issue 30 item 1: one agentd per database unless every process on it is an
// instance of a cluster. Real processes on a real SQLite file and a real PostgreSQL database.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { DEFAULT_MODELS, fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { http } from '../support/http.ts';
import { agentdExit, exitOf, startAgentd, type AgentdProcess } from '../support/agentd-process.ts';
import { startTenantServer, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { urlFor } from '../tenancy/support/scratch-cluster.ts';
import { tenantDatabaseName } from '../../src/tenancy/provision.ts';
import { DatabaseInUse } from '../../src/store/database-claim.ts';

const IN_USE = /in use by another agentd/;
/** The backends holding agentd's claim on the test's database: the advisory lock ("agnt", 1). */
const CLAIM_HOLDERS = "select pid from pg_locks where locktype = 'advisory' and granted and classid = 1634168436 and objid = 1 and database = (select oid from pg_database where datname = current_database())";

function argsFor(backend: TestBackend, models: unknown = DEFAULT_MODELS): string[] {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
  const modelsFile = join(backend.stateDir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(models));
  return ['--state-dir', backend.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, ...(backend.databaseUrl ? ['--database-url', backend.databaseUrl] : [])];
}

/** The first process answers as before: ready, and its session is there. */
async function assertServing(agentd: AgentdProcess, sessionId: string): Promise<void> {
  assert.equal((await http('GET', `${agentd.url}/readyz`)).status, 200);
  assert.equal((await http('GET', `${agentd.url}/v1/sessions/${sessionId}`)).status, 200);
  assert.equal((await http('PATCH', `${agentd.url}/v1/sessions/${sessionId}`, { body: { title: 'still writing' } })).status, 200);
}

describe('a second agentd on one SQLite file', () => {
  let backend: TestBackend;
  const running: AgentdProcess[] = [];
  before(async () => {
    backend = await createBackend('sqlite');
  });
  after(async () => {
    for (const agentd of running) await agentd.kill();
    await backend.drop();
  });

  it('is refused (exit 2) while the first lives, the first untouched; kill -9 of the first lets the next start', async () => {
    const args = argsFor(backend);
    const first = await startAgentd(args);
    running.push(first);
    const session = (await http('POST', `${first.url}/v1/sessions`, { body: {} })).json;

    const second = await agentdExit(args);
    assert.equal(second.code, 2, second.stderr);
    assert.match(second.stderr, IN_USE);
    assert.match(second.stderr, /agentd\.sqlite/);
    await assertServing(first, session.id);

    await first.kill();
    const third = await startAgentd(args);
    running.push(third);
    assert.equal((await http('GET', `${third.url}/v1/sessions/${session.id}`)).json.title, 'still writing');
    // and it holds the file in turn
    const fourth = await agentdExit(args);
    assert.equal(fourth.code, 2);
    assert.match(fourth.stderr, IN_USE);
  });

  it('refuses --cluster without a PostgreSQL URL (exit 2)', async () => {
    const refused = await agentdExit([...argsFor(backend), '--cluster']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--cluster: requires a PostgreSQL --database-url/);
  });
});

describe('agentd processes on one PostgreSQL database', () => {
  let backend: TestBackend;
  let fake: FakeProvider;
  const running: AgentdProcess[] = [];
  let admin: pg.Client;
  before(async () => {
    backend = await createBackend('postgres');
    fake = await startFakeProvider();
    admin = new pg.Client({ connectionString: backend.databaseUrl! });
    await admin.connect();
  });
  afterEach(async () => {
    for (const agentd of running.splice(0)) await agentd.kill();
  });
  after(async () => {
    await admin.end();
    await fake.close();
    await backend.drop();
  });
  const start = async (args: string[]) => {
    const agentd = await startAgentd(args);
    running.push(agentd);
    return agentd;
  };

  it('refuse each other both ways between a sole and a clustered process; instances of a cluster share it', async () => {
    const args = argsFor(backend);
    const sole = await start(args);
    const session = (await http('POST', `${sole.url}/v1/sessions`, { body: {} })).json;
    for (const extra of [[], ['--cluster']]) {
      const refused = await agentdExit([...args, ...extra]);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, IN_USE);
    }
    await assertServing(sole, session.id);
    const ready = (await http('GET', `${sole.url}/readyz`)).json;
    assert.equal(ready.ready, true);
    assert.match(ready.instance, /^[^-]+.*-\d+-[0-9a-f]{6}$/, 'host name, pid and a random suffix');
    assert.ok(ready.instance.includes(`-${sole.child.pid}-`));

    await sole.kill();
    const alpha = await start([...args, '--cluster', '--instance-id', 'alpha']);
    const beta = await start([...args, '--cluster', '--instance-id', 'beta']);
    assert.deepEqual((await http('GET', `${alpha.url}/readyz`)).json, { ready: true, instance: 'alpha' });
    assert.deepEqual((await http('GET', `${beta.url}/readyz`)).json, { ready: true, instance: 'beta' });
    assert.equal((await http('GET', `${beta.url}/v1/sessions/${session.id}`)).json.title, 'still writing');
    const unclustered = await agentdExit(args);
    assert.equal(unclustered.code, 2);
    assert.match(unclustered.stderr, /in use by another agentd/);
    await alpha.stop();
    await beta.stop();
  });

  it('an instance joining a live cluster leaves its turns running; a lone instance resumes what the dead left', async () => {
    const args = [...argsFor(backend, fakeProviderModels(fake.baseUrl)), '--cluster', '--turn-lease-seconds', '3'];
    const alpha = await start([...args, '--instance-id', 'alpha']);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    fake.enqueue({ kind: 'hang', afterText: 'working' });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'long job' } })).json;
    await fake.waitForRequests(1);

    const beta = await start([...args, '--instance-id', 'beta']);
    // (the database may still say queued: the owner writes running without waiting for it)
    assert.ok(['queued', 'running'].includes((await http('GET', `${beta.url}/v1/turns/${turn.id}`)).json.status), 'the joiner left it alone');
    assert.equal((await http('GET', `${alpha.url}/v1/turns/${turn.id}`)).json.status, 'running');

    await alpha.kill();
    await beta.kill();
    const gamma = await start([...args, '--instance-id', 'gamma']);
    // CONTRACT.md §18: once the dead owner's lease has run out, the lone instance takes the turn
    // over and resumes it (its model request had no answer recorded: it is asked again)
    const deadline = Date.now() + 30_000;
    let ended = (await http('GET', `${gamma.url}/v1/turns/${turn.id}`)).json;
    while (!['completed', 'failed', 'cancelled'].includes(ended.status) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      ended = (await http('GET', `${gamma.url}/v1/turns/${turn.id}`)).json;
    }
    assert.deepEqual([ended.status, ended.error, ended.attempt], ['completed', null, 2]);
    await gamma.stop();
  });

  it('stands down (exit 1) when its claim was lost and another agentd holds the database', async () => {
    const args = argsFor(backend);
    const first = await start(args);
    // The database restarts under it, as far as its claim's connection can tell; before it
    // reconnects, someone else (this test, standing in for a second agentd) holds the lock.
    await admin.query(`select pg_terminate_backend(pid) from (${CLAIM_HOLDERS}) holders`);
    await admin.query('select pg_advisory_lock(1634168436, 1)');
    assert.equal(await exitOf(first), 1);
    assert.match(first.stdout(), /standing down/);
    await admin.query('select pg_advisory_unlock(1634168436, 1)');
  });

  it('takes its claim again after losing the connection when nobody else holds the database', async () => {
    const args = argsFor(backend);
    const first = await start(args);
    const terminated = await admin.query(`select pg_terminate_backend(pid) from (${CLAIM_HOLDERS}) holders`);
    assert.equal(terminated.rows.length, 1);
    // the reclaim runs after a second; then a newcomer is refused again
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const refused = await agentdExit(args);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, IN_USE);
    assert.equal((await http('GET', `${first.url}/readyz`)).status, 200);
    await first.stop();
  });
});

describe('multi-tenant hosting', () => {
  let host: TenantServer;
  before(async () => {
    host = await startTenantServer({ tenantCount: 1, models: DEFAULT_MODELS });
  });
  after(async () => {
    await host?.close();
  });

  it('holds the administrative database (a second host is refused) and each open tenant database', async () => {
    // a second host that starts (a broken claim) is stopped at once, so the test fails instead of hanging on it
    const second = host.restart().then(async (started) => {
      await started.stop();
      throw new Error('a second host started on the same registry database');
    });
    await assert.rejects(second, (error: Error) => error instanceof DatabaseInUse && IN_USE.test(error.message));
    assert.equal((await host.tenants[0].request('GET', '/readyz')).status, 200, 'the first host is untouched');

    const [alice] = host.tenants;
    assert.equal((await alice.request('POST', '/v1/sessions', { body: {} })).status, 201, 'the tenant runtime is open');
    const backend: TestBackend = { kind: 'postgres', stateDir: realpathSync(mkdtempSync(join(tmpdir(), 'agentd-tenantdb-'))), databaseUrl: urlFor('postgres', tenantDatabaseName(alice.id)), drop: async () => {} };
    const refused = await agentdExit(argsFor(backend));
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, IN_USE);
    assert.equal((await alice.request('GET', '/v1/sessions')).status, 200);
  });
});
