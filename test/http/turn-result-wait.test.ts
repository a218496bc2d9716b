/**
 * GET /v1/turns/:id/result?wait=SECONDS (CONTRACT.md §24): held until the turn ends or the wait
 * runs out, capped per boundary (429 too_many_waits), released when the client goes away. The cap
 * is --max-event-subscribers, here 1, which also tells a held wait apart from an answered one: a
 * second wait is refused exactly while the first is held.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request, type ClientRequest } from 'node:http';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels, startTestServer, type TestServer } from '../support/server.ts';

describe('GET /v1/turns/:id/result?wait=', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let sessionId: string;
  before(async () => {
    fake = await startFakeProvider();
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), args: ['--max-event-subscribers', '1'] });
    sessionId = (await server.request('POST', '/v1/sessions', { body: {} })).json.id;
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  /** A turn whose model never answers: it runs until cancelled. */
  async function hangingTurn(): Promise<string> {
    const before = fake.requests.length;
    fake.enqueue({ kind: 'hang' });
    const turn = await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input: 'take your time' } });
    assert.equal(turn.status, 202, turn.text);
    await fake.waitForRequests(before + 1, 30_000);
    return turn.json.id;
  }

  /**
   * Starts a waiting request and resolves, with its answer still to come, once the server holds it:
   * a probe is then refused with 429. When the probe took the one place first, the request was
   * refused instead; it is started again.
   */
  async function held<T>(turnId: string, start: () => Promise<T>): Promise<{ answer: Promise<T> }> {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const request = start();
      let settled = false;
      request.then(() => (settled = true), () => (settled = true));
      const probe = await server.request('GET', `/v1/turns/${turnId}/result?wait=1`);
      if (probe.status === 429 && !settled) {
        assert.equal(probe.json.error.code, 'too_many_waits');
        assert.match(probe.json.error.message, /at most 1 requests may wait/);
        return { answer: request };
      }
      await request;
    }
    assert.fail('no wait was ever held');
  }

  it('answers when the turn ends: a cancel while the request waits gives 200 with the cancelled turn', async () => {
    const turnId = await hangingTurn();
    const { answer: waiting } = await held(turnId, () => server.request('GET', `/v1/turns/${turnId}/result?wait=60`));
    const cancelled = await server.request('POST', `/v1/turns/${turnId}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    const answer = await waiting;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.turn.id, turnId);
    assert.equal(answer.json.turn.status, 'cancelled');
    // the cap is released with the answer: the next wait on an ended turn answers at once
    assert.equal((await server.request('GET', `/v1/turns/${turnId}/result?wait=60`)).status, 200);
  });

  it('answers 409 turn_not_terminal, with the turn, when the wait runs out first', async () => {
    const turnId = await hangingTurn();
    const answer = await server.request('GET', `/v1/turns/${turnId}/result?wait=1`);
    assert.equal(answer.status, 409, answer.text);
    assert.equal(answer.json.error.code, 'turn_not_terminal');
    assert.equal(answer.json.error.details.status, 'running');
    await server.request('POST', `/v1/turns/${turnId}/cancel`);
  });

  it('a client that goes away ends its wait and frees its place under the cap', async () => {
    const turnId = await hangingTurn();
    let leaving: ClientRequest | undefined;
    const { answer: gone } = await held(turnId, () => new Promise<number | Error>((resolve) => {
      leaving = request(`${server.url}/v1/turns/${turnId}/result?wait=60`, (response) => resolve(response.statusCode ?? 0));
      leaving.on('error', resolve);
      leaving.end();
    }));
    leaving!.destroy();
    assert.equal((await gone as Error).message, 'socket hang up');
    // once the server has seen it go, another wait is held again (and runs out: 409, not 429)
    let next;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      next = await server.request('GET', `/v1/turns/${turnId}/result?wait=1`);
      if (next.status !== 429) break;
    }
    assert.equal(next?.status, 409, next?.text);
    await server.request('POST', `/v1/turns/${turnId}/cancel`);
  });

  for (const bad of ['61', '-1', 'x', '1.5', '']) {
    it(`refuses wait=${JSON.stringify(bad)} with 400 invalid_query in the envelope`, async () => {
      const turnId = (await server.request('GET', `/v1/turns?sessionId=${sessionId}`)).json.data[0].id;
      const answer = await server.request('GET', `/v1/turns/${turnId}/result?wait=${encodeURIComponent(bad)}`);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.json.error.code, 'invalid_query');
      assert.equal(answer.json.error.message, 'wait must be an integer number of seconds from 0 to 60');
      assert.equal(typeof answer.json.error.requestId, 'string');
    });
  }

  it('is marked as an extension in /openapi.json, 0 to 60 seconds, default 0', async () => {
    const document = (await server.request('GET', '/openapi.json')).json;
    const operation = document.paths['/v1/turns/{id}/result'].get;
    const wait = operation.parameters.find((parameter: { name: string }) => parameter.name === 'wait');
    assert.equal(wait['x-agentd-extension'], true);
    assert.equal(wait.in, 'query');
    assert.deepEqual({ type: wait.schema.type, minimum: wait.schema.minimum, maximum: wait.schema.maximum, default: wait.schema.default }, { type: 'integer', minimum: 0, maximum: 60, default: 0 });
    assert.ok(operation.responses['429']);
  });
});
