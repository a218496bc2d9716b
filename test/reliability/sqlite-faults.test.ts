// Issue 17 §3, SQLite: the state dir on a small tmpfs that fills up, then is remounted read-only.
// Writes fail with a clear 503 store_unavailable (never 500), a turn that ends meanwhile is failed
// saying its history could not be stored, the file stays intact (integrity_check), and everything
// works again once space (or write access) returns, without a restart.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels, startTestServer, waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import { invariantViolations, type Requester } from './support/invariants.ts';

const TERMINAL = ['completed', 'failed', 'cancelled'];

describe('SQLite on a full disk and a read-only mount', () => {
  let mountPoint: string;
  let fake: FakeProvider;
  let server: TestServer;
  let request: Requester;
  const filler = () => join(mountPoint, 'filler');

  before(async () => {
    mountPoint = mkdtempSync(join(tmpdir(), 'agentd-smalldisk-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mountPoint]);
    fake = await startFakeProvider();
    const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-smalldisk-ws-')));
    server = await startTestServer({
      models: fakeProviderModels(fake.baseUrl),
      reuse: { backend: { kind: 'sqlite', stateDir: join(mountPoint, 'state'), databaseUrl: null, drop: async () => {} }, workspace },
    });
    request = async (method, path, body) => {
      const answer = await server.request(method, path, body === undefined ? {} : { body });
      return { status: answer.status, json: answer.json };
    };
  });
  after(async () => {
    await server?.stop();
    await fake?.close();
    try {
      execFileSync('umount', [mountPoint]);
    } catch {
      // not mounted
    }
    rmSync(mountPoint, { recursive: true, force: true });
  });

  async function expectStoreUnavailable(label: string, sessionId: string): Promise<void> {
    for (const [method, path, body] of [
      ['POST', '/v1/sessions', {}],
      ['PATCH', `/v1/sessions/${sessionId}`, { title: 'y'.repeat(512) }],
    ] as Array<[string, string, unknown]>) {
      const answer = await request(method, path, body);
      assert.equal(answer.status, 503, `${label}: ${method} ${path} ${JSON.stringify(answer.json)}`);
      assert.equal(answer.json.error.code, 'store_unavailable');
    }
  }

  async function durablyTerminal(sessionId: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const turns = (await request('GET', `/v1/turns?sessionId=${sessionId}`)).json.data;
      if (turns.every((turn: any) => TERMINAL.includes(turn.status))) return;
      assert.ok(Date.now() < deadline, `still active: ${JSON.stringify(turns.map((turn: any) => turn.status))}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  function integrity(): string {
    const database = new Database(join(mountPoint, 'state', 'agentd.sqlite'), { readonly: true });
    try {
      return String(database.pragma('integrity_check', { simple: true }));
    } finally {
      database.close();
    }
  }

  it('a full disk: clear errors, a clearly failed turn, no corruption, recovery when space returns', async () => {
    const session = (await request('POST', '/v1/sessions', {})).json;
    const idle = (await request('POST', '/v1/sessions', {})).json;
    fake.enqueue({ kind: 'reply', text: 'words '.repeat(20), chunkDelayMs: 60 });
    const turn = (await request('POST', `/v1/sessions/${session.id}/turns`, { input: 'fill the disk meanwhile' })).json;
    await waitForStatus(server, turn.id, 'running');
    // Every byte the tmpfs has left goes to a filler file.
    try {
      writeFileSync(filler(), Buffer.alloc(16 * 1024 * 1024));
    } catch (error) {
      assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
    }
    await expectStoreUnavailable('disk full', idle.id);
    const stranded = await waitForTurn(server, turn.id, 20_000);
    assert.equal(stranded.status, 'failed');
    assert.match(stranded.error, /could not be stored/);

    rmSync(filler());
    await durablyTerminal(session.id);
    assert.equal(integrity(), 'ok');
    const created = await request('POST', '/v1/sessions', {});
    assert.equal(created.status, 201);
    fake.enqueue({ kind: 'reply', text: 'space again' });
    const next = (await request('POST', `/v1/sessions/${session.id}/turns`, { input: 'and now?' })).json;
    assert.equal((await waitForTurn(server, next.id)).status, 'completed');
    assert.deepEqual(await invariantViolations(request), []);
  });

  it('a read-only file system at start: a clear refusal, then a normal start once writable', async () => {
    // A mount with a file open for writing cannot turn read-only, so this is the start-up case.
    rmSync(filler(), { force: true });
    await server.stop();
    execFileSync('mount', ['-o', 'remount,ro', mountPoint]);
    try {
      await assert.rejects(
        startTestServer({ models: fakeProviderModels(fake.baseUrl), reuse: { backend: server.backend, workspace: server.workspace } }),
        (error: Error) => /read-?only/i.test(error.message),
      );
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', mountPoint]);
    }
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), reuse: { backend: server.backend, workspace: server.workspace } });
    assert.equal((await request('POST', '/v1/sessions', {})).status, 201);
    assert.equal(integrity(), 'ok');
    assert.deepEqual(await invariantViolations(request), []);
  });
});
