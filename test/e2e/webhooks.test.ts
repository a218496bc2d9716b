// Webhooks through the real server (CONTRACT.md §20, docs/WEBHOOKS.md): a real loopback receiver
// checks every signature; deliveries are retried with backoff, survive kill -9 and a restart, and a
// receiver that never answers slows no turn. SQLite and PostgreSQL alike.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKENDS, createBackend } from '../support/backends.ts';
import { fakeProviderModels, startTestServer, waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { startAgentd } from '../support/agentd-process.ts';
import { http } from '../support/http.ts';
import { sample } from '../telemetry/prometheus-text.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function secretFile(): { path: string; secret: string } {
  const secret = randomBytes(24).toString('hex');
  const path = join(mkdtempSync(join(tmpdir(), 'agentd-webhook-secret-')), 'secret');
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  return { path, secret };
}

const webhookArgs = (receiver: { url: string }, secret: string) => ['--webhook-url', receiver.url, '--webhook-secret-file', secret, '--allow-loopback-webhooks'];
const ofType = (type: string) => (webhook: ReceivedWebhook) => webhook.json?.type === type;

async function withServer(backend: (typeof BACKENDS)[number], receiverAnswer: Parameters<typeof startWebhookReceiver>[1], run: (context: { server: TestServer; fake: FakeProvider; receiver: WebhookReceiver; secret: string }) => Promise<void>): Promise<void> {
  const { path, secret } = secretFile();
  const receiver = await startWebhookReceiver(secret, receiverAnswer);
  const fake = await startFakeProvider();
  let server: TestServer | null = null;
  try {
    server = await startTestServer({ backend, models: fakeProviderModels(fake.baseUrl), args: [...webhookArgs(receiver, path), '--metrics-port', '0'], captureLogs: true });
    await run({ server, fake, receiver, secret });
  } finally {
    await server?.close();
    await fake.close();
    await receiver.close();
  }
}

async function turnOf(server: TestServer, input: string): Promise<any> {
  const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
  return (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input } })).json;
}

/** The metrics once `ready` holds of them (within 10 s), else as they are then. */
async function metricsOnce(server: TestServer, ready: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = (await http('GET', server.server.metricsUrl!)).text;
    if (ready(text) || Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const backend of BACKENDS) {
  describe(`webhooks on ${backend}`, () => {
    it('POSTs a completed turn, signed with the secret, as {id, type, at, sessionId, turnId, tenantId, data}', async () => {
      await withServer(backend, {}, async ({ server, fake, receiver, secret }) => {
        fake.enqueue({ kind: 'reply', text: 'the secret answer is 42' });
        const turn = await turnOf(server, 'a prompt nobody may log');
        assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
        const [webhook] = await receiver.waitFor(1, ofType('turn.completed'));
        assert.equal(webhook.signatureValid, true, 'X-Agentd-Signature is the HMAC-SHA256 of the body');
        assert.match(webhook.signature!, /^sha256=[0-9a-f]{64}$/);
        assert.match(webhook.contentType!, /^application\/json/);
        assert.deepEqual(Object.keys(webhook.json), ['id', 'type', 'at', 'sessionId', 'turnId', 'tenantId', 'data']);
        assert.match(webhook.json.id, UUID);
        assert.equal(webhook.json.sessionId, turn.sessionId);
        assert.equal(webhook.json.turnId, turn.id);
        assert.equal(webhook.json.tenantId, null, 'single-user mode');
        assert.deepEqual(webhook.json.data, { error: null });
        assert.ok(Math.abs(Date.parse(webhook.json.at) - Date.parse((await server.request('GET', `/v1/turns/${turn.id}`)).json.finishedAt)) < 1000);
        // a forged body fails the receiver's check: the signature covers every byte
        const forged = webhook.body.replace('"data":{', '"data":{"x":1,');
        assert.notEqual(`sha256=${(await import('node:crypto')).createHmac('sha256', secret).update(forged).digest('hex')}`, webhook.signature);

        // the receiver has the body before the worker records its answer
        const text = await metricsOnce(server, (scraped) => sample(scraped, 'agentd_webhooks_delivered_total') === 1);
        assert.equal(sample(text, 'agentd_webhooks_retried_total'), 0);
        assert.equal(sample(text, 'agentd_webhooks_dropped_total'), 0);
        assert.equal(sample(text, 'agentd_webhook_delivery_seconds_count'), 1);
        const logs = server.logs().join('\n');
        assert.doesNotMatch(logs, new RegExp(secret), 'the secret is never logged');
        assert.doesNotMatch(logs, /nobody may log|secret answer/, 'nor the payload');
        assert.equal(receiver.received.length, 1, 'turn.queued, turn.started and the rest are not delivered');
      });
    });

    it('announces a human request and a cancelled turn', async () => {
      await withServer(backend, {}, async ({ server, fake, receiver }) => {
        fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'x.txt'] }), callId: 'call_touch' }] }, { kind: 'hang' });
        const turn = await turnOf(server, 'make a file');
        await waitForStatus(server, turn.id, 'waiting_for_input');
        const [created] = await receiver.waitFor(1, ofType('request.created'));
        const [pending] = (await server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data;
        assert.deepEqual(created.json.data, pending, 'data is the HumanRequest itself');
        assert.equal(created.json.turnId, turn.id);
        assert.equal(created.signatureValid, true);
        await server.request('POST', `/v1/turns/${turn.id}/cancel`);
        const [cancelled] = await receiver.waitFor(1, ofType('turn.cancelled'));
        assert.deepEqual(cancelled.json.data, { error: 'cancelled' });
        assert.notEqual(cancelled.json.id, created.json.id);
      });
    });

    it('retries a failing receiver with growing pauses and the same id and body, then delivers', async () => {
      await withServer(backend, { answer: (n) => (n <= 2 ? 503 : 200) }, async ({ server, fake, receiver }) => {
        fake.enqueue({ kind: 'reply', text: 'done' });
        const turn = await turnOf(server, 'go');
        await waitForTurn(server, turn.id);
        const attempts = await receiver.waitFor(3, ofType('turn.completed'));
        assert.equal(new Set(attempts.map((attempt) => attempt.body)).size, 1, 'every attempt sends the same bytes (and id)');
        assert.ok(attempts.every((attempt) => attempt.signatureValid));
        const [first, second, third] = attempts.map((attempt) => attempt.at);
        // the first retry after 1-2 s, the second after 2-4 s (CONTRACT: the first within 30 s)
        assert.ok(second - first >= 900 && second - first < 30_000, `first pause ${second - first} ms`);
        assert.ok(third - second >= 1_800, `second pause ${third - second} ms`);
        const text = await metricsOnce(server, (scraped) => sample(scraped, 'agentd_webhooks_delivered_total') === 1);
        assert.equal(sample(text, 'agentd_webhooks_retried_total'), 2);
        const rows = await server.server.store.db.selectFrom('webhook_outbox').selectAll().execute();
        assert.deepEqual(rows, [], 'a delivered event leaves the outbox');
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        assert.equal(receiver.received.length, 3, 'nothing more is sent once delivered');
      });
    });

    it('never lets a receiver that does not answer slow a turn, and holds a bounded number of its connections', async () => {
      await withServer(backend, { answer: () => 'hold' }, async ({ server, fake, receiver }) => {
        const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
        const durations: number[] = [];
        for (let index = 0; index < 12; index++) {
          fake.enqueue({ kind: 'reply', text: `answer ${index}` });
          const started = Date.now();
          const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: `turn ${index}` } })).json;
          assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
          durations.push(Date.now() - started);
        }
        await receiver.waitFor(8);
        assert.ok(receiver.received.every((webhook) => webhook.signatureValid));
        assert.ok(receiver.openConnections > 0, 'deliveries are still held open by the receiver while turns finished');
        assert.ok(receiver.peakConnections <= 8, `at most 8 deliveries in flight (saw ${receiver.peakConnections})`);
        // generous: the turns of a fake provider take milliseconds; a turn waiting on the 10 s delivery timeout would show
        assert.ok(Math.max(...durations) < 5_000, `turn durations ${durations.join(', ')} ms`);
      });
    });
  });
}

describe('webhooks across kill -9 and a restart', () => {
  for (const backend of BACKENDS) {
    it(`delivers on ${backend} what a killed server owed, once the receiver and the server are back`, async () => {
      const { path, secret } = secretFile();
      // a receiver that is gone: its port is known, nothing listens there
      const probe = await startWebhookReceiver(secret);
      const port = probe.port;
      const url = probe.url;
      await probe.close();
      const fake = await startFakeProvider();
      const store = await createBackend(backend);
      const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
      const modelsFile = join(store.stateDir, 'models.json');
      writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
      const args = ['--state-dir', store.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, ...(store.databaseUrl ? ['--database-url', store.databaseUrl] : []), ...webhookArgs({ url }, path)];
      let receiver: WebhookReceiver | null = null;
      try {
        const first = await startAgentd(args);
        const session = (await http('POST', `${first.url}/v1/sessions`, { body: {} })).json;
        fake.enqueue({ kind: 'reply', text: 'finished before the crash' });
        const done = (await http('POST', `${first.url}/v1/sessions/${session.id}/turns`, { body: { input: 'one' } })).json;
        for (let status = ''; status !== 'completed'; status = (await http('GET', `${first.url}/v1/turns/${done.id}`)).json.status) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const other = (await http('POST', `${first.url}/v1/sessions`, { body: {} })).json;
        fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'y.txt'] }), callId: 'call_y' }] }, { kind: 'hang' });
        const waiting = (await http('POST', `${first.url}/v1/sessions/${other.id}/turns`, { body: { input: 'two' } })).json;
        for (let status = ''; status !== 'waiting_for_input'; status = (await http('GET', `${first.url}/v1/turns/${waiting.id}`)).json.status) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        // let the first attempts fail against the absent receiver
        await new Promise((resolve) => setTimeout(resolve, 500));
        await first.kill();

        receiver = await startWebhookReceiver(secret, { port });
        const second = await startAgentd(args);
        try {
          const webhooks = await receiver.waitFor(3, () => true, 30_000);
          const byType = new Map(webhooks.map((webhook) => [webhook.json.type, webhook.json]));
          assert.equal(byType.get('turn.completed')?.turnId, done.id);
          assert.equal(byType.get('request.created')?.turnId, waiting.id);
          assert.equal(byType.get('turn.failed')?.turnId, waiting.id, 'the turn the crash interrupted is announced failed');
          assert.deepEqual(byType.get('turn.failed')?.data, { error: 'interrupted' });
          assert.ok(webhooks.every((webhook) => webhook.signatureValid));
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          const ids = receiver.received.map((webhook) => webhook.json.id);
          assert.equal(new Set(ids).size, 3, `three events, any repeat only as the same id (${ids.length} deliveries)`);
        } finally {
          await second.stop();
        }
      } finally {
        await receiver?.close();
        await fake.close();
        await store.drop();
      }
    });
  }
});
