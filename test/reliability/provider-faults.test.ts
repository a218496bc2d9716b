// Issue 17 §4: every provider fault ends the turn in a terminal state (a clear error or a retried
// success), none hangs; a silent stream is aborted by the stall watchdog as `stalled`; output per
// model step is bounded. The server runs with --model-stall-timeout 1.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { useFakeServer } from '../support/harness.ts';
import { fakeProviderModels, waitForTurn } from '../support/server.ts';
import type { FakeStep } from '../support/fake-provider.ts';

const DIALECT_MODELS = ['fake-responses', 'fake-anthropic', 'fake-chat'] as const;

/** A loopback port nobody listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

const refusedPort = await closedPort();

describe('provider faults', () => {
  const harness = useFakeServer({
    args: ['--model-stall-timeout', '1'],
    models: (baseUrl) => {
      const models = fakeProviderModels(baseUrl);
      models.connections.push({ id: 'refused', provider: 'refused', dialect: 'openai-responses', baseUrl: `http://127.0.0.1:${refusedPort}/v1`, apiKeyEnv: null });
      models.models.push({ ...models.models[0], id: 'refused-model', connection: 'refused' });
      return models;
    },
  });

  /**
   * Runs one turn against the scripted steps (or `every` request answered with one fault) and
   * returns it terminal, with its events.
   */
  async function turnAgainst(model: string, steps: FakeStep[] | { every: FakeStep }, timeoutMs = 20_000) {
    const { server, fake, events } = harness;
    if (Array.isArray(steps)) fake.enqueue(...steps);
    else fake.setDefaultStep(steps.every);
    const session = await harness.newSession({ model });
    const submitted = await harness.submit(session.id, 'fault please');
    const turn = await waitForTurn(server, submitted.id, timeoutMs).finally(() => fake.setDefaultStep({ kind: 'reply' }));
    await events.waitFor((event) => event.data?.turnId === turn.id && event.type === `turn.${turn.status}`);
    assert.equal(fake.pendingSteps(), 0, 'every scripted step was consumed');
    const healthy = await server.request('GET', '/readyz');
    assert.equal(healthy.status, 200, 'the server stays ready');
    return { turn, events: events.ofTurn(turn.id) };
  }

  const attemptReasons = (events: Array<{ type: string; data: any }>) =>
    events.filter((event) => event.type === 'response.attempt.failed').map((event) => event.data.data.reason);

  it('connection refused: retried, then a failed turn naming the connection error', async () => {
    const { turn, events } = await turnAgainst('refused-model', []);
    assert.equal(turn.status, 'failed');
    assert.match(turn.error, /^provider_error: /);
    assert.equal(attemptReasons(events).length, 3, 'three retries before giving up');
  });

  for (const model of DIALECT_MODELS) {
    it(`${model}: a connection reset mid-stream is retried to success`, async () => {
      const { turn, events } = await turnAgainst(model, [{ kind: 'drop', afterText: 'half of it' }, { kind: 'reply', text: 'whole answer' }]);
      assert.equal(turn.status, 'completed');
      assert.equal(attemptReasons(events).length, 1);
      const result = (await harness.server.request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.equal(result.output.assistantText, 'whole answer');
    });

    it(`${model}: malformed SSE fails or retries, never hangs`, async () => {
      const garbage: FakeStep = { kind: 'raw', body: 'data: {this is not json\n\nevent: ???\ndata: [[[\n\n' };
      const { turn } = await turnAgainst(model, { every: garbage });
      assert.equal(turn.status, 'failed');
      assert.match(turn.error, /^provider_error: /);
    });

    it(`${model}: a 200 with an HTML body is a clear failure`, async () => {
      const html: FakeStep = { kind: 'raw', status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<!doctype html><html><body><h1>Bad gateway</h1></body></html>' };
      const { turn } = await turnAgainst(model, { every: html });
      assert.equal(turn.status, 'failed');
      assert.match(turn.error, /^provider_error: /);
    });

    it(`${model}: endless output is cut at the per-step bound and fails the turn`, async () => {
      const { turn } = await turnAgainst(model, [{ kind: 'endless' }]);
      assert.equal(turn.status, 'failed');
      assert.match(turn.error, /output_limit: the model streamed more than 2000000 characters/);
      assert.equal(harness.fake.requests.at(-1)?.dialect !== null, true);
    });
  }

  it('a slow first byte beyond the stall timeout is aborted as stalled and retried to success', async () => {
    const { turn, events } = await turnAgainst('fake-responses', [{ kind: 'slow-first-byte', delayMs: 3_000, text: 'too late' }, { kind: 'reply', text: 'in time' }]);
    assert.equal(turn.status, 'completed');
    assert.deepEqual(attemptReasons(events), ['stalled']);
    const restarted = events.find((event) => event.type === 'response.restarted');
    assert.match(restarted!.data.data.reason, /^stalled: /);
    const result = (await harness.server.request('GET', `/v1/turns/${turn.id}/result`)).json;
    assert.equal(result.output.assistantText, 'in time');
  });

  it('the summary of /compact is bounded by the same stall timeout as an answer', async () => {
    const { server, fake, events } = harness;
    const session = await harness.newSession({ model: 'fake-responses' });
    fake.enqueue({ kind: 'reply', text: 'something worth summarising' });
    await waitForTurn(server, (await harness.submit(session.id, 'remember this')).id);
    fake.enqueue({ kind: 'slow-first-byte', delayMs: 3_000, text: 'a late summary' }, { kind: 'reply', text: 'a timely summary' });
    const turn = await waitForTurn(server, (await harness.submit(session.id, '/compact')).id, 20_000);
    assert.equal(turn.status, 'completed');
    await events.waitFor((event) => event.data?.turnId === turn.id && event.type === 'turn.completed');
    const warnings = events.ofTurn(turn.id).filter((event) => event.type === 'warning').map((event) => event.data.data.text);
    assert.ok(warnings.some((text) => /^compacting the context: model request 1 failed/.test(text)), `a stalled summary attempt is retried: ${JSON.stringify(warnings)}`);
    const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
    assert.equal(result.output.assistantText, 'a timely summary');
    assert.equal(fake.pendingSteps(), 0);
  });

  for (const model of DIALECT_MODELS) {
    it(`${model}: a stream that stops sending bytes fails the turn as stalled after the retries`, async () => {
      const started = Date.now();
      const hang: FakeStep = { kind: 'hang', afterText: 'and then nothing' };
      const { turn, events } = await turnAgainst(model, { every: hang });
      assert.equal(turn.status, 'failed');
      assert.match(turn.error, /^provider_error: stalled: the model stream sent nothing for 1 s/);
      assert.deepEqual(attemptReasons(events), ['stalled', 'stalled', 'stalled']);
      assert.ok(Date.now() - started < 15_000, 'four 1 s stalls and the backoff, not a hang');
      const history = (await harness.server.request('GET', `/v1/sessions/${turn.sessionId}/history`)).json;
      assert.equal(history.data.at(-1).turn.error, turn.error, 'the durable history says why');
    });
  }
});
