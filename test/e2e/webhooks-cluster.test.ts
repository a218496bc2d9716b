// Webhooks in a cluster (docs/WEBHOOKS.md): every instance's worker sends from the one outbox, no
// event twice; a turn whose owner died and that another instance ends (its cancel taken over) is
// announced in the transaction that ends it. Real processes on PostgreSQL, kill -9.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentdProcess } from '../support/agentd-process.ts';
import { until, useTestCluster } from '../support/cluster.ts';
import { http } from '../support/http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const LEASE_SECONDS = 5;
const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('webhooks of a cluster', () => {
  let receiver: WebhookReceiver;
  let secretFile: string;
  before(async () => {
    const secret = randomBytes(24).toString('hex');
    secretFile = join(mkdtempSync(join(tmpdir(), 'agentd-webhook-secret-')), 'secret');
    writeFileSync(secretFile, secret, { mode: 0o600 });
    receiver = await startWebhookReceiver(secret);
  });
  after(() => receiver.close());
  // registered after the receiver's hook, so its arguments can name the receiver
  const cluster = useTestCluster(() => ['--turn-lease-seconds', String(LEASE_SECONDS), '--webhook-url', receiver.url, '--webhook-secret-file', secretFile, '--allow-loopback-webhooks']);
  const { start } = cluster;

  it('announces each event once across the instances, and the end of a dead owner\'s turn that another instance cancelled', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'never.txt'])] });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'make a file' } })).json;
    const [created] = await receiver.waitFor(1, (webhook) => webhook.json?.type === 'request.created' && webhook.json.turnId === turn.id);
    await until('beta to list alpha\'s request', async () => ((await http('GET', `${beta.url}/v1/requests?turnId=${turn.id}`)).json.data.length > 0 ? true : undefined));

    await alpha.kill();
    const cancelled = await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`);
    assert.deepEqual([cancelled.json.status, cancelled.json.attempt], ['cancelled', 2], 'taken over and ended by beta');
    const [end] = await receiver.waitFor(1, (webhook) => webhook.json?.type === 'turn.cancelled' && webhook.json.turnId === turn.id);
    assert.deepEqual(end.json.data, { error: null });
    assert.equal(end.json.sessionId, session.id);
    assert.equal(end.signatureValid, true);

    // another turn on beta, while alpha's outbox rows (none left) and beta's worker share the table
    cluster.fake.enqueue({ kind: 'reply', text: 'after' });
    const next = (await http('POST', `${beta.url}/v1/sessions/${session.id}/turns`, { body: { input: 'again' } })).json;
    await receiver.waitFor(1, (webhook) => webhook.json?.type === 'turn.completed' && webhook.json.turnId === next.id);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const ids = receiver.received.map((webhook) => webhook.json.id);
    assert.equal(ids.length, new Set(ids).size, `no event sent twice (${receiver.received.map((webhook) => webhook.json.type).join(', ')})`);
    assert.ok(ids.includes(created.json.id));
  });
});
