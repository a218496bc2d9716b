/**
 * Webhook delivery latency (CONTRACT.md §20, issue 32): from a turn's end (the `at` of its
 * turn.completed body, taken just before the transaction that stores the turn and its outbox row)
 * to a loopback receiver reading the whole signed POST. A real server (in this process) on a fake
 * model, a real receiver answering 204 at once, the real database (BENCH_BACKEND=sqlite|postgres).
 *
 * Two shapes: turns one after another (each delivery alone), and bursts of BENCH_BURST turns on as
 * many sessions at once (deliveries queue behind the 8 in flight). Prints p50, p99 and max, and
 * the same measured from the turn.completed SSE event's arrival at a subscriber, which goes out
 * once the transaction has committed: what the outbox path adds after the commit.
 *
 *   node --import tsx bench/webhooks.ts
 *   BENCH_BACKEND=postgres BENCH_TURNS=200 node --import tsx bench/webhooks.ts
 */
import { loadavg, tmpdir } from 'node:os';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fakeProviderModels, startTestServer, waitForTurn } from '../test/support/server.ts';
import { startFakeProvider } from '../test/support/fake-provider.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../test/support/webhook-receiver.ts';
import { EventRecorder } from '../test/support/events.ts';
import { fixed, percentile, printFigure, runIfMain } from './support/report.ts';

/** ms from each turn's end to its delivery, and from its SSE turn.completed to its delivery */
async function latencies(receiver: WebhookReceiver, sseAt: Map<string, number>, turnIds: string[]): Promise<{ fromEnd: number[]; fromSse: number[] }> {
  const wanted = new Set(turnIds);
  const arrived = (await receiver.waitFor(turnIds.length, (webhook) => wanted.has(webhook.json?.turnId), 120_000)).filter((webhook) => wanted.has(webhook.json.turnId));
  return {
    fromEnd: arrived.map((webhook) => webhook.at - Date.parse(webhook.json.at)),
    fromSse: arrived.map((webhook) => webhook.at - sseAt.get(webhook.json.turnId)!),
  };
}

function report(name: string, values: number[], context: string): void {
  printFigure({ name, value: `${fixed(percentile(values, 0.5))} ms p50, ${fixed(percentile(values, 0.99))} ms p99, ${fixed(Math.max(...values))} ms max`, detail: context });
}

runIfMain(import.meta.url, async () => {
  const turns = Number(process.env.BENCH_TURNS ?? 100);
  const burst = Number(process.env.BENCH_BURST ?? 20);
  const backend = (process.env.BENCH_BACKEND ?? 'sqlite') as 'sqlite' | 'postgres';
  const secret = randomBytes(24).toString('hex');
  const secretFile = join(mkdtempSync(join(tmpdir(), 'agentd-bench-webhooks-')), 'secret');
  writeFileSync(secretFile, secret, { mode: 0o600 });
  const receiver = await startWebhookReceiver(secret);
  const fake = await startFakeProvider();
  fake.setDefaultStep({ kind: 'reply', text: 'done' });
  const server = await startTestServer({ backend, models: fakeProviderModels(fake.baseUrl), args: ['--webhook-url', receiver.url, '--webhook-secret-file', secretFile, '--allow-loopback-webhooks', '--max-concurrent-turns', String(burst)] });
  // when each turn.completed reached an SSE subscriber (sent once the turn's transaction committed)
  const sseAt = new Map<string, number>();
  const recorder = new EventRecorder(server.url);
  const push = recorder.events.push.bind(recorder.events);
  recorder.events.push = (...events) => {
    for (const event of events) if (event.type === 'turn.completed') sseAt.set(event.data.turnId, Date.now());
    return push(...events);
  };
  await recorder.opened;
  try {
    const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
    const sequential: string[] = [];
    for (let index = 0; index < turns + 10; index++) {
      const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: `turn ${index}` } })).json;
      await waitForTurn(server, turn.id);
      await receiver.waitFor(1, (webhook) => webhook.json?.turnId === turn.id);
      if (index >= 10) sequential.push(turn.id);
    }
    const one = await latencies(receiver, sseAt, sequential);
    const sessions = await Promise.all(Array.from({ length: burst }, async () => (await server.request('POST', '/v1/sessions', { body: {} })).json.id as string));
    const bursts: string[] = [];
    for (let round = 0; round < Math.max(1, Math.round(turns / burst)); round++) {
      const started = await Promise.all(sessions.map(async (id) => (await server.request('POST', `/v1/sessions/${id}/turns`, { body: { input: `burst ${round}` } })).json.id as string));
      await Promise.all(started.map((id) => waitForTurn(server, id, 60_000)));
      bursts.push(...started);
    }
    const many = await latencies(receiver, sseAt, bursts);
    const invalid = receiver.received.filter((webhook) => !webhook.signatureValid).length;
    if (invalid > 0) throw new Error(`${invalid} deliveries failed the signature check`);
    const context = `${backend}; load average ${loadavg().map((value) => fixed(value)).join(' ')}; node ${process.version}`;
    report(`Webhook delivery, one turn at a time (${one.fromEnd.length} turns), from the turn's end`, one.fromEnd, context);
    report('  the same, from the SSE turn.completed', one.fromSse, context);
    report(`Webhook delivery, bursts of ${burst} turns at once (${many.fromEnd.length} turns), from the turn's end`, many.fromEnd, context);
    report('  the same, from the SSE turn.completed', many.fromSse, context);
  } finally {
    recorder.close();
    await server.close();
    await fake.close();
    await receiver.close();
  }
});
