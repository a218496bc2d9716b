/**
 * Provider errors through the real server: quota and spend-limit failures are not retried, and
 * every failure becomes a turn error naming the provider and the status. The connection's API key
 * is sent to the provider, and the provider echoes it back in its error messages; it must appear
 * in no response body, no event and no stored row.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeStep } from '../support/fake-provider.ts';
import type { EventRecorder } from '../support/events.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';

/** Not shaped like any known key format, so only scrubbing of the configured key can hide it. */
const SECRET = `agentd-test-secret-${randomUUID()}`;
const KEY_ENV = 'AGENTD_FAKE_PROVIDER_KEY';

/** The fake provider's models, each connection sending the key from KEY_ENV. */
function modelsNeedingTheKey(baseUrl: string) {
  const models = fakeProviderModels(baseUrl);
  return { ...models, connections: models.connections.map((connection) => ({ ...connection, apiKeyEnv: KEY_ENV })) };
}

const CASES: Array<{ name: string; model: string; step: FakeStep; error: RegExp; keyHeader: [string, string] }> = [
  {
    name: 'an OpenAI insufficient_quota 429 on Responses',
    model: 'fake-responses',
    step: { kind: 'http-error', status: 429, headers: { 'retry-after': '0' }, body: { error: { message: `You exceeded your current quota (key ${SECRET}).`, type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } },
    error: /^provider_error: fake-openai returned HTTP 429 \(insufficient_quota\)/,
    keyHeader: ['authorization', `Bearer ${SECRET}`],
  },
  {
    name: 'an insufficient_quota 429 on Chat Completions',
    model: 'fake-chat',
    step: { kind: 'http-error', status: 429, body: { error: { message: `Quota exhausted for ${SECRET}`, type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } },
    error: /^provider_error: fake-openai returned HTTP 429 \(insufficient_quota\)/,
    keyHeader: ['authorization', `Bearer ${SECRET}`],
  },
  {
    name: 'an Anthropic spend-limit 429',
    model: 'fake-anthropic',
    step: {
      kind: 'http-error',
      status: 429,
      headers: { 'retry-after': '0' },
      body: { type: 'error', error: { type: 'rate_limit_error', message: `Spend limit reached for key ${SECRET}`, details: { error_code: 'enforced_spend_limit_reached' } } },
    },
    error: /^provider_error: fake-anthropic returned HTTP 429 \(enforced_spend_limit_reached\)/,
    keyHeader: ['x-api-key', SECRET],
  },
  {
    name: 'an Anthropic billing error',
    model: 'fake-anthropic',
    step: { kind: 'http-error', status: 402, body: { type: 'error', error: { type: 'billing_error', message: `No credit left on ${SECRET}` } } },
    error: /^provider_error: fake-anthropic returned HTTP 402 \(billing_error\)/,
    keyHeader: ['x-api-key', SECRET],
  },
  {
    name: 'a rejected key',
    model: 'fake-responses',
    step: { kind: 'http-error', status: 401, body: { error: { message: `Incorrect API key provided: ${SECRET}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } },
    error: /^provider_error: fake-openai returned HTTP 401 \(invalid_api_key\)/,
    keyHeader: ['authorization', `Bearer ${SECRET}`],
  },
];

describe('provider errors through the real server', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  let events!: EventRecorder;
  /** every response body the tests read, checked for the key at the end */
  const bodies: string[] = [];
  const harness = useFakeServer({ models: modelsNeedingTheKey, env: { [KEY_ENV]: SECRET } });
  before(() => ({ fake, server, events } = harness));

  const read = async (method: string, path: string, body?: unknown) => {
    const response = await server.request(method, path, body === undefined ? {} : { body });
    bodies.push(response.text);
    return response;
  };

  for (const failure of CASES) {
    it(`${failure.name} fails the turn at once, naming provider and status`, async () => {
      const session = (await read('POST', '/v1/sessions', { model: failure.model })).json;
      const before = fake.requests.length;
      // a retry would get the fake's default reply and complete the turn
      fake.enqueue(failure.step);
      const turn = await read('POST', `/v1/sessions/${session.id}/turns`, { input: 'spend money' });
      const done = await waitForTurn(server, turn.json.id);
      assert.equal(done.status, 'failed');
      assert.match(done.error, failure.error);
      assert.ok(!done.error.includes(SECRET));
      assert.match(done.error, /\[redacted\]/, 'the echoed key is replaced, not the whole message');

      assert.equal(fake.requests.length - before, 1, 'not retried');
      assert.equal(fake.requests[before].headers[failure.keyHeader[0]], failure.keyHeader[1], 'the key did reach the provider');

      const failed = await events.waitForType('turn.failed', turn.json.id);
      assert.match(failed.data.data.error, failure.error);
      const types = events.ofTurn(turn.json.id).map((event) => event.type);
      for (const retryEvent of ['response.attempt.failed', 'provider.limit', 'response.restarted']) assert.ok(!types.includes(retryEvent), retryEvent);

      await read('GET', `/v1/turns/${turn.json.id}`);
      const result = await read('GET', `/v1/turns/${turn.json.id}/result`);
      assert.match(result.json.turn.error, failure.error);
      assert.equal(result.json.output, null);
      await read('GET', `/v1/turns?sessionId=${session.id}`);
      await read('GET', `/v1/sessions/${session.id}/history`);
      const [stored] = await readHistoryRange(server.server.store.db, session.id, 0, 10);
      assert.match(stored.error!, failure.error);
      bodies.push(JSON.stringify(stored));
    });
  }

  it('the key appears in no response body, no event and no stored row', async () => {
    await read('GET', '/v1/models');
    await read('GET', '/v1/sessions?archive=all&limit=100');
    const texts = [...bodies, ...events.events.map((event) => JSON.stringify(event))];
    assert.ok(texts.length > CASES.length * 6);
    for (const text of texts) assert.ok(!text.includes(SECRET), `the key leaked into ${text.slice(0, 200)}`);
  });
});
