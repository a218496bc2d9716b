import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { AgentdError, createClient, OPERATION_ROUTES, type AgentdClient, type OperationId } from '../../src/client/index.ts';

const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

/** Records which operation each request was, by method and path template. */
function recordingFetch(called: Set<OperationId>): typeof fetch {
  const routes = Object.entries(OPERATION_ROUTES).map(([id, route]) => ({
    id: id as OperationId,
    method: route.method,
    pattern: new RegExp(`^${route.path.replace(/\{\w+\}/g, '[^/]+').replace(/\./g, '\\.')}$`),
  }));
  return async (input, init) => {
    const url = new URL(String(input));
    const match = routes.find((route) => route.method === (init?.method ?? 'GET') && route.pattern.test(url.pathname));
    if (match) called.add(match.id);
    return fetch(input, init);
  };
}

for (const backend of BACKENDS) {
  describe(`every operation through the SDK on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    let client: AgentdClient;
    const called = new Set<OperationId>();
    const started = useServerOnFakeProvider({ backend });
    before(() => {
      ({ fake, server } = started);
      client = createClient({ baseUrl: `${server.url}/`, fetch: recordingFetch(called) });
    });

    it('answers each operation with its typed body', async () => {
      assert.deepEqual(await client.getHealth(), { ok: true });
      const ready = await client.getReady();
      assert.deepEqual(ready, { ready: true, instance: ready.instance });
      assert.equal(typeof ready.instance, 'string');
      const document = await client.getOpenApi();
      assert.equal(document.openapi, '3.1.0');
      const models = await client.listModels();
      assert.deepEqual(models.data.map((model) => model.id).sort(), ['fake-anthropic', 'fake-chat', 'fake-responses']);

      const session = await client.createSession({ body: { title: 'sdk' } });
      assert.equal(session.title, 'sdk');
      assert.equal((await client.getSession({ path: { id: session.id } })).id, session.id);
      const page = await client.listSessions({ query: { archive: 'all', limit: 1 } });
      assert.deepEqual(page.data.map((entry) => entry.id), [session.id]);
      assert.equal((await client.patchSession({ path: { id: session.id }, body: { title: 'renamed' } })).title, 'renamed');

      fake.enqueue({ kind: 'reply', text: 'first answer' });
      const turn = await client.createTurn({ path: { id: session.id }, body: { input: 'hello' } });
      assert.equal(turn.sessionId, session.id);
      const result = await client.waitForTurn(turn.id);
      assert.equal(result.turn.status, 'completed');
      assert.equal(result.output?.assistantText, 'first answer');
      assert.equal((await client.getTurn({ path: { id: turn.id } })).status, 'completed');
      assert.equal((await client.getTurnResult({ path: { id: turn.id } })).output?.assistantText, 'first answer');
      assert.deepEqual((await client.listTurns({ query: { sessionId: session.id } })).data.map((entry) => entry.id), [turn.id]);
      assert.deepEqual(await client.getTurnAgents({ path: { id: turn.id } }), { data: [] });
      const history = await client.getHistory({ path: { id: session.id }, query: { limit: 10 } });
      assert.equal(history.total, 1);
      assert.equal(history.data[0].turn.assistantText, 'first answer');
      const child = await client.forkSession({ path: { id: session.id }, body: { title: 'child' } });
      assert.notEqual(child.id, session.id);

      fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'sdk.txt'])] }, { kind: 'hang' });
      const waiting = await client.createTurn({ path: { id: session.id }, body: { input: 'make a file' } });
      let pending = (await client.listRequests({ query: { turnId: waiting.id } })).data;
      for (let tries = 0; pending.length === 0 && tries < 500; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        pending = (await client.listRequests({ query: { turnId: waiting.id } })).data;
      }
      assert.equal(pending[0].kind, 'tool_approval');
      assert.equal((await client.resolveRequest({ path: { id: pending[0].id }, body: { decision: 'deny' } })).id, pending[0].id);
      const cancelled = await client.cancelTurn({ path: { id: waiting.id } });
      assert.equal(cancelled.status, 'cancelled');
      // the denied call changed nothing: reverting the turn writes nothing back
      assert.deepEqual(await client.revertTurn({ path: { id: waiting.id } }), { reverted: [] });

      const stream = await client.streamEvents({ query: { sessionId: session.id } });
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
      await stream.body?.cancel();

      assert.equal(await client.deleteSession({ path: { id: child.id } }), undefined);
      assert.deepEqual([...called].sort(), Object.keys(OPERATION_ROUTES).sort(), 'the SDK reached every operation of /openapi.json');
    });

    it('throws AgentdError with status, code, message, requestId and details', async () => {
      const missing = await client.getSession({ path: { id: '00000000-0000-7000-8000-000000000000' } }).catch((error: unknown) => error);
      assert.ok(missing instanceof AgentdError);
      assert.equal(missing.status, 404);
      assert.equal(missing.code, 'session_not_found');
      assert.match(missing.requestId ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
      assert.ok(missing.message.length > 0);

      const session = await client.createSession();
      const malformed = await client.createTurn({ path: { id: session.id }, body: { input: 'x', extra: true } as never }).catch((error: unknown) => error);
      assert.ok(malformed instanceof AgentdError);
      assert.equal(malformed.status, 400);
      assert.equal(malformed.code, 'invalid_json');
      assert.ok(malformed.details !== undefined, 'details name the offending path');

      const empty = await client.createTurn({ path: { id: session.id }, body: { input: '  ' } }).catch((error: unknown) => error);
      assert.ok(empty instanceof AgentdError);
      assert.equal(empty.status, 422);
      assert.equal(empty.code, 'empty_input');

      fake.enqueue({ kind: 'hang' });
      const active = await client.createTurn({ path: { id: session.id }, body: { input: 'wait' } });
      const notTerminal = await client.getTurnResult({ path: { id: active.id } }).catch((error: unknown) => error);
      assert.ok(notTerminal instanceof AgentdError);
      assert.equal(notTerminal.code, 'turn_not_terminal');
      assert.equal((notTerminal.details as { id: string }).id, active.id, 'details carry the Turn');
      await client.cancelTurn({ path: { id: active.id } });

      await assert.rejects(() => client.getSession({ path: { id: '' } }), TypeError, 'an empty path parameter never becomes a request');
    });
  });
}

describe('the SDK against a server with a bearer token', () => {
  let server: TestServer;
  const token = 'sdk-test-token-0123456789abcdef0123456789';
  before(async () => {
    server = await startTestServer({ env: { SERVICE_TOKEN: token } });
  });
  after(() => server.close());

  it('sends the token, and a wrong one is a 401 AgentdError without the token in it', async () => {
    assert.deepEqual((await createClient({ baseUrl: server.url, token }).listModels()).data.length, 2);
    const wrong = await createClient({ baseUrl: server.url, token: 'wrong-token' }).listModels().catch((error: unknown) => error);
    assert.ok(wrong instanceof AgentdError);
    assert.equal(wrong.status, 401);
    assert.equal(wrong.code, 'unauthorized');
    assert.ok(!JSON.stringify({ ...wrong, message: wrong.message }).includes('wrong-token'));
  });
});
