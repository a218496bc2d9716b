// Issue 17 §3: the database goes away under load. PostgreSQL (a private cluster, stopped and
// started again): /readyz 503, requests fail with store_unavailable (never 500), turns that could
// not be finalised end in a clear terminal state once it returns, and agentd recovers without a
// restart.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels, startTestServer, waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import { startPrivatePostgres, type PrivatePostgres } from './support/private-postgres.ts';
import { invariantViolations, type Requester } from './support/invariants.ts';

const TERMINAL = ['completed', 'failed', 'cancelled'];

describe('PostgreSQL stopped and started under load', () => {
  let postgres: PrivatePostgres;
  let fake: FakeProvider;
  let server: TestServer;
  let request: Requester;
  before(async () => {
    postgres = await startPrivatePostgres();
    fake = await startFakeProvider();
    const stateDir = mkdtempSync(join(tmpdir(), 'agentd-pgfault-'));
    const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-pgfault-ws-')));
    server = await startTestServer({
      models: fakeProviderModels(fake.baseUrl),
      reuse: { backend: { kind: 'postgres', stateDir, databaseUrl: postgres.databaseUrl, drop: async () => {} }, workspace },
      args: ['--max-concurrent-turns', '8'],
      captureLogs: true,
    });
    request = async (method, path, body) => {
      const answer = await server.request(method, path, body === undefined ? {} : { body });
      return { status: answer.status, json: answer.json, headers: answer.headers } as never;
    };
  });
  after(async () => {
    await server?.stop();
    await fake?.close();
    postgres?.destroy();
  });

  it('answers store_unavailable while down, ends the stranded turns clearly and recovers', async () => {
    const sessions = await Promise.all([0, 1, 2].map(async () => (await request('POST', '/v1/sessions', {})).json.id as string));
    // read once before the outage, so that its row is kept (store/session-row-cache.ts): a rename
    // then gets past the session lookup and fails at its write
    const idle = (await request('POST', '/v1/sessions', {})).json.id as string;
    assert.equal((await request('GET', `/v1/sessions/${idle}`)).status, 200);
    for (let index = 0; index < 3; index++) fake.enqueue({ kind: 'reply', text: 'slow words '.repeat(15), chunkDelayMs: 100 });
    const turns = await Promise.all(sessions.map(async (id) => (await request('POST', `/v1/sessions/${id}/turns`, { input: 'stream while the database dies' })).json.id as string));
    for (const id of turns) await waitForStatus(server, id, 'running');

    postgres.stop();
    const started = Date.now();
    const refusedIds: string[] = [];
    for (const [method, path, body] of [
      ['GET', '/readyz'],
      ['GET', '/v1/sessions'],
      ['POST', '/v1/sessions', {}],
      ['GET', `/v1/sessions/${sessions[0]}/history`],
      ['PATCH', `/v1/sessions/${idle}`, { title: 'renamed while down' }],
    ] as Array<[string, string, unknown?]>) {
      const answer: any = await request(method, path, body);
      assert.equal(answer.status, 503, `${method} ${path}: ${JSON.stringify(answer.json)}`);
      assert.equal(answer.json.error.code, 'store_unavailable', `${method} ${path}`);
      assert.ok(answer.headers['retry-after'], `${method} ${path} says when to retry`);
      refusedIds.push(answer.headers['x-request-id']);
    }
    assert.ok(Date.now() - started < 30_000, 'each answer came within the connection timeout');
    // each refusal is one request line at warn with its code (and what the database said), no stack
    const logged = server.logs().map((line) => JSON.parse(line));
    for (const requestId of refusedIds) {
      const lines = logged.filter((line) => line.reqId === requestId);
      assert.deepEqual(lines.map((line) => [line.level, line.msg, line.code]), [[40, 'request', 'store_unavailable']], JSON.stringify(lines));
    }
    const reasons = logged.filter((line) => refusedIds.includes(line.reqId) && line.reason).map((line) => line.reason);
    assert.ok(reasons.length >= 3 && reasons.every((reason) => typeof reason === 'string' && reason.length > 0), JSON.stringify(reasons));
    assert.ok(!logged.some((line) => refusedIds.includes(line.reqId) && (line.err || line.stack)), 'no stack for a refusal');
    // a session with an active turn is busy whether or not the database answers
    const busy: any = await request('PATCH', `/v1/sessions/${sessions[0]}`, { title: 'renamed while busy' });
    assert.equal(busy.status, 409, JSON.stringify(busy.json));
    assert.equal(busy.json.error.code, 'session_busy');
    // The turns finish streaming while the database is gone: they cannot be finalised.
    const stranded = await Promise.all(turns.map((id) => waitForTurn(server, id, 30_000)));
    for (const turn of stranded) assert.equal(turn.status, 'failed', JSON.stringify(turn));
    for (const turn of stranded) assert.match(turn.error, /could not be stored/);

    postgres.start();
    const deadline = Date.now() + 20_000;
    while ((await request('GET', '/readyz')).status !== 200) {
      assert.ok(Date.now() < deadline, 'ready again without a restart');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Once the database is back, the stranded turns are durably terminal, and the sessions work.
    const settleBy = Date.now() + 20_000;
    for (;;) {
      const listed = await Promise.all(sessions.map(async (id) => (await request('GET', `/v1/turns?sessionId=${id}`)).json.data));
      if (listed.flat().every((turn: any) => TERMINAL.includes(turn.status))) break;
      assert.ok(Date.now() < settleBy, `durable turns still active: ${JSON.stringify(listed.flat().map((turn: any) => turn.status))}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    fake.enqueue({ kind: 'reply', text: 'after the outage' });
    const next = (await request('POST', `/v1/sessions/${sessions[0]}/turns`, { input: 'and now?' })).json;
    assert.equal((await waitForTurn(server, next.id)).status, 'completed');
    assert.deepEqual(await invariantViolations(request), []);
  });
});
