// The outbox worker on a real database and a real receiver: deliveries 24 h old are dropped after
// one more failed attempt, rows for URLs no longer configured are dropped at start, and two
// workers on one database (a cluster) never send a row twice at once.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { BACKENDS } from '../../support/backends.ts';
import { useStore } from '../../support/store.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';
import { WebhookWorker } from '../../../src/runtime/webhooks/webhook-worker.ts';
import { WebhookSender } from '../../../src/runtime/webhooks/webhook-sender.ts';
import { insertOutboxRows, type OutboxRow } from '../../../src/store/webhook-outbox.ts';
import { GIVE_UP_AFTER_MS } from '../../../src/runtime/webhooks/retry-schedule.ts';
import { uuidv7 } from '../../../src/domain/ids.ts';
import { NO_METRICS, type MetricsRecorder } from '../../../src/telemetry/recorder.ts';

const SECRET = 'w'.repeat(40);
const logger = pino({ level: 'silent' });

function counting(): MetricsRecorder & { delivered: number; retried: number; dropped: number } {
  const counts = { delivered: 0, retried: 0, dropped: 0 };
  return {
    ...NO_METRICS,
    ...counts,
    webhookDelivered() { this.delivered += 1; },
    webhookRetried() { this.retried += 1; },
    webhookDropped(count = 1) { this.dropped += count; },
  };
}

function row(url: string, createdAt: number, eventId = uuidv7()): OutboxRow {
  return { id: uuidv7(), event_id: eventId, url, event_type: 'turn.completed', body: JSON.stringify({ id: eventId }), created_at: createdAt, next_attempt_at: createdAt, attempts: 0 };
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const backend of BACKENDS) {
  describe(`the webhook worker on ${backend}`, () => {
    const context = useStore(backend);
    let receiver!: WebhookReceiver;
    before(async () => (receiver = await startWebhookReceiver(SECRET)));
    after(() => receiver.close());
    const left = () => context.store.db.selectFrom('webhook_outbox').selectAll().execute();

    it('drops a delivery that still fails 24 h after its event, counted, after one more attempt', async () => {
      receiver.answer = () => 500;
      const db = context.store.db;
      const now = Date.now();
      await insertOutboxRows(db, [row(receiver.url, now - GIVE_UP_AFTER_MS - 1), row(receiver.url, now - GIVE_UP_AFTER_MS + 60_000)]);
      const metrics = counting();
      const sender = new WebhookSender({ secret: SECRET, allowLoopback: true });
      const worker = new WebhookWorker({ db, sender, urls: [receiver.url], metrics, logger });
      await worker.start({ alone: true, releaseClaims: true });
      await until(() => metrics.dropped === 1 && metrics.retried === 1);
      const [kept] = await left();
      assert.equal(kept.attempts, 1, 'the younger one is owed again');
      assert.ok(kept.next_attempt_at > now, 'later');
      assert.equal(receiver.received.length, 2, 'each was tried once');
      await worker.stop();
      sender.close();
      await db.deleteFrom('webhook_outbox').execute();
    });

    it('drops at start the deliveries of URLs no longer configured, and delivers the rest', async () => {
      receiver.answer = () => 200;
      receiver.received.length = 0;
      const db = context.store.db;
      await insertOutboxRows(db, [row('http://127.0.0.1:1/removed', Date.now()), row(receiver.url, Date.now())]);
      const metrics = counting();
      const sender = new WebhookSender({ secret: SECRET, allowLoopback: true });
      const worker = new WebhookWorker({ db, sender, urls: [receiver.url], metrics, logger });
      await worker.start({ alone: true, releaseClaims: true });
      await until(async () => (await left()).length === 0);
      assert.equal(metrics.dropped, 1);
      assert.equal(metrics.delivered, 1);
      assert.equal(receiver.received.length, 1);
      await until(() => worker.idle);
      await worker.stop();
      sender.close();
    });

    it('two workers on one database send each row once', async () => {
      receiver.answer = () => 200;
      receiver.received.length = 0;
      const db = context.store.db;
      const rows = Array.from({ length: 40 }, () => row(receiver.url, Date.now()));
      await insertOutboxRows(db, rows);
      const metrics = counting();
      const senders = [new WebhookSender({ secret: SECRET, allowLoopback: true }), new WebhookSender({ secret: SECRET, allowLoopback: true })];
      const workers = senders.map((sender) => new WebhookWorker({ db, sender, urls: [receiver.url], metrics, logger }));
      await Promise.all(workers.map((worker) => worker.start({ alone: false, releaseClaims: false })));
      await until(async () => (await left()).length === 0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(receiver.received.length, 40);
      assert.equal(new Set(receiver.received.map((webhook) => webhook.body)).size, 40, 'no row sent twice');
      await Promise.all(workers.map((worker) => worker.stop()));
      for (const sender of senders) sender.close();
    });
  });
}
