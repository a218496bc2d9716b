import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { useFakeServer } from '../support/harness.ts';
import { AgentdError, createClient } from '../../src/client/index.ts';

describe('submitTurn and waitForTurn', () => {
  const harness = useFakeServer();

  /** Sends createTurn for real, then loses the answer the given way the first `times` times. */
  function losingFetch(lose: () => Response | never, times = 1) {
    const sentBodies: any[] = [];
    const wrapped: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST' && String(input).endsWith('/turns')) {
        sentBodies.push(JSON.parse(String(init.body)));
        if (sentBodies.length <= times) {
          await response.body?.cancel();
          return lose();
        }
      }
      return response;
    };
    return { wrapped, sentBodies };
  }

  for (const [name, lose] of [
    ['a network error', () => { throw new TypeError('fetch failed'); }],
    ['a 502 without an error envelope', () => new Response('<html>bad gateway</html>', { status: 502 })],
  ] as const) {
    it(`retries after ${name} with the same clientRequestId and gets the one turn`, async () => {
      const { wrapped, sentBodies } = losingFetch(lose, 2);
      const client = createClient({ baseUrl: harness.server.url, fetch: wrapped });
      const session = await client.createSession();
      harness.fake.enqueue({ kind: 'reply', text: 'only once' });
      const turn = await client.submitTurn(session.id, 'exactly once please');

      assert.equal(sentBodies.length, 3, 'two lost answers, then the one that arrived');
      const ids = new Set(sentBodies.map((body) => body.clientRequestId));
      assert.equal(ids.size, 1, 'every attempt carried the same clientRequestId');
      assert.equal(turn.clientRequestId, sentBodies[0].clientRequestId);
      const turns = await client.listTurns({ query: { sessionId: session.id } });
      assert.deepEqual(turns.data.map((entry) => entry.id), [turn.id], 'the server admitted one turn, not three');
      const result = await client.waitForTurn(turn.id);
      assert.equal(result.output?.assistantText, 'only once');
    });
  }

  it('does not retry a definite refusal, and keeps the clientRequestId on the error for a later retry', async () => {
    const { wrapped, sentBodies } = losingFetch(() => new Response(null, { status: 500 }), 0);
    const client = createClient({ baseUrl: harness.server.url, fetch: wrapped });
    const session = await client.createSession();
    const clientRequestId = crypto.randomUUID();
    const refused = await client.submitTurn(session.id, { input: ' ', clientRequestId }).catch((error: unknown) => error);
    assert.ok(refused instanceof AgentdError);
    assert.equal(refused.code, 'empty_input');
    assert.equal((refused as AgentdError & { clientRequestId: string }).clientRequestId, clientRequestId);
    assert.equal(sentBodies.length, 1);
  });

  it('waitForTurn falls back to polling when no event stream can be had', async () => {
    let streamAttempts = 0;
    const noEvents: typeof fetch = async (input, init) => {
      if (String(input).includes('/v1/events')) {
        streamAttempts += 1;
        return new Response(JSON.stringify({ error: { code: 'origin_not_allowed', message: 'no', requestId: 'r' } }), { status: 403 });
      }
      return fetch(input, init);
    };
    const client = createClient({ baseUrl: harness.server.url, fetch: noEvents });
    const session = await client.createSession();
    harness.fake.enqueue({ kind: 'reply', text: 'polled', chunkDelayMs: 30 });
    const turn = await client.submitTurn(session.id, 'poll me');
    const started = Date.now();
    const result = await client.waitForTurn(turn.id, { pollIntervalMs: 60_000 });
    assert.equal(result.turn.status, 'completed');
    assert.equal(result.output?.assistantText, 'polled');
    assert.ok(streamAttempts >= 1);
    assert.ok(Date.now() - started < 10_000, 'the failed stream switched polling to its fast pace');
  });

  it('waitForTurn without events reads the result once: the server holds the read (?wait=) until the turn ends', async () => {
    const reads: Array<{ url: string; status: number }> = [];
    const noEvents: typeof fetch = async (input, init) => {
      if (String(input).includes('/v1/events')) return new Response(JSON.stringify({ error: { code: 'origin_not_allowed', message: 'no', requestId: 'r' } }), { status: 403 });
      const response = await fetch(input, init);
      if (String(input).includes('/result')) reads.push({ url: String(input), status: response.status });
      return response;
    };
    const client = createClient({ baseUrl: harness.server.url, fetch: noEvents });
    const session = await client.createSession();
    harness.fake.enqueue({ kind: 'reply', text: 'held until the end', chunkDelayMs: 100 });
    const turn = await client.submitTurn(session.id, 'take your time');
    const result = await client.waitForTurn(turn.id, { pollIntervalMs: 60_000 });
    assert.equal(result.output?.assistantText, 'held until the end');
    assert.equal(reads.length, 1, JSON.stringify(reads));
    assert.match(reads[0].url, /\/result\?wait=30$/);
    assert.equal(reads[0].status, 200);
  });

  it('waitForTurn resolves from events, for a turn that ends later, and at once for one already over', async () => {
    const client = createClient({ baseUrl: harness.server.url });
    const session = await client.createSession();
    harness.fake.enqueue({ kind: 'reply', text: 'slow answer', chunkDelayMs: 100 });
    const turn = await client.submitTurn(session.id, 'take your time');
    const result = await client.waitForTurn(turn.id, { pollIntervalMs: 60_000 });
    assert.equal(result.output?.assistantText, 'slow answer');
    assert.equal((await client.waitForTurn(turn.id)).turn.id, turn.id);
  });
});
