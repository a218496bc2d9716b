// Webhooks in multi-tenant mode (docs/WEBHOOKS.md): server-wide URLs, each delivery carrying its
// tenant's id, leaving from the tenant's own database; a tenant whose runtime the LRU closed, or
// that has made no request since a restart, still has its deliveries sent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeProvider } from '../support/fake-provider.ts';
import { startTenantTurn, waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const secret = randomBytes(24).toString('hex');
const secretFile = join(mkdtempSync(join(tmpdir(), 'agentd-webhook-secret-')), 'secret');
writeFileSync(secretFile, secret, { mode: 0o600 });
const receiver: WebhookReceiver = await startWebhookReceiver(secret, { answer: () => 503 });

async function waitFor(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('webhooks of tenants', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let a!: TenantClient;
  let b!: TenantClient;
  const started = useTenantsOnFakeProvider({
    tenantCount: 2,
    args: ['--max-active-tenants', '1', '--webhook-url', receiver.url, '--webhook-secret-file', secretFile, '--allow-loopback-webhooks'],
  });
  before(() => {
    ({ fake, hosted } = started);
    [a, b] = hosted.tenants;
  });
  after(() => receiver.close());
  const deliveredFor = (turnId: string) => receiver.received.filter((webhook) => webhook.json?.turnId === turnId);

  it('delivers a tenant\'s event with its tenantId, from its own outbox, after the LRU closed its runtime', async () => {
    fake.setDefaultStep({ kind: 'reply', text: 'done' });
    const turn = await startTenantTurn(a, 'go');
    await waitForTenantTurn(a, turn.id);
    await waitFor(() => deliveredFor(turn.id).length >= 1);
    // b takes the one runtime slot: a's runtime closes with its delivery still owed
    assert.equal((await b.request('GET', '/v1/sessions')).status, 200);
    await waitFor(() => hosted.logLines.some((line) => line.includes('tenant runtime closed') && line.includes(a.id)));
    receiver.answer = () => 204;
    await waitFor(() => deliveredFor(turn.id).some((webhook) => webhook.answer === 204), 20_000);
    const attempts = deliveredFor(turn.id);
    assert.ok(attempts.length >= 2, 'failed while open, delivered by the drain');
    assert.equal(attempts[0].answer, 503);
    assert.equal(attempts[0].json.type, 'turn.completed');
    assert.ok(attempts.every((webhook) => webhook.signatureValid));
    assert.equal(attempts[0].json.tenantId, a.id);
    assert.equal(new Set(attempts.map((webhook) => webhook.json.id)).size, 1, 'one event, repeated only as its id');
    // delivered: the drain sends it no more
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.equal(deliveredFor(turn.id).length, attempts.length);
  });

  it('delivers after a restart what a tenant owed, before that tenant makes any request', async () => {
    receiver.answer = () => 503;
    const turn = await startTenantTurn(b, 'again');
    await waitForTenantTurn(b, turn.id);
    await waitFor(() => deliveredFor(turn.id).length >= 1);
    await hosted.stop();
    receiver.answer = () => 204;
    const before = deliveredFor(turn.id).length;
    const logMark = hosted.logLines.length;
    hosted = await started.restart();
    await waitFor(() => deliveredFor(turn.id).length > before);
    assert.ok(!hosted.logLines.slice(logMark).some((line) => line.includes('tenant runtime started')), 'no tenant asked anything since the restart');
    const last = deliveredFor(turn.id).at(-1)!;
    assert.equal(last.json.tenantId, b.id);
    assert.equal(last.json.type, 'turn.completed');
    assert.equal(last.signatureValid, true);
  });
});
