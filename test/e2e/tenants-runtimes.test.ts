import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeProvider } from '../support/fake-provider.ts';
import { startTenantTurn, waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';

const isRunning = (turn: any) => turn.status === 'running';

describe('tenant runtimes and limits: three tenants, two runtime slots', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let a!: TenantClient;
  let b!: TenantClient;
  let c!: TenantClient;
  const started = useTenantsOnFakeProvider({
    tenantCount: 3,
    args: ['--max-active-tenants', '2', '--max-concurrent-turns', '2', '--max-concurrent-turns-per-tenant', '1', '--max-queued-turns-per-tenant', '2', '--max-event-subscribers-per-tenant', '1'],
  });
  before(() => {
    ({ fake, hosted } = started);
    [a, b, c] = hosted.tenants;
  });

  const newTurn = (tenant: TenantClient, input = 'go') => startTenantTurn(tenant, input);

  it('closes the least recently used idle runtime for a new tenant, and answers 503 when none is idle', async () => {
    const bTurn = await newTurn(b);
    await waitForTenantTurn(b, bTurn.id);
    assert.equal((await b.request('GET', `/v1/turns/${bTurn.id}/agents`)).status, 200, 'b\'s runtime holds its turn');
    fake.setDefaultStep({ kind: 'hang' });
    const aTurn = await newTurn(a);
    await waitForTenantTurn(a, aTurn.id, isRunning);
    // a is busy and b idle: c takes b's slot
    assert.equal((await c.request('GET', '/v1/sessions')).status, 200);
    await waitFor(() => hosted.logLines.some((line) => line.includes('tenant runtime closed') && line.includes(b.id)));
    // now a and c are busy: b has no slot
    const cTurn = await newTurn(c);
    await waitForTenantTurn(c, cTurn.id, isRunning);
    const refused = await b.request('GET', '/v1/sessions');
    assert.equal(refused.status, 503);
    assert.equal(refused.json.error.code, 'tenant_runtime_unavailable');
    assert.equal(refused.headers['retry-after'], '5');
    // a and c are untouched by b's refusal
    assert.equal((await a.request('GET', `/v1/turns/${aTurn.id}`)).json.status, 'running');
    fake.setDefaultStep({ kind: 'reply' });
    await a.request('POST', `/v1/turns/${aTurn.id}/cancel`);
    await c.request('POST', `/v1/turns/${cTurn.id}/cancel`);
    // b comes back in a fresh runtime: its turn is durable, its agents no longer held
    assert.equal((await b.request('GET', `/v1/turns/${bTurn.id}`)).json.status, 'completed');
    assert.equal((await b.request('GET', `/v1/turns/${bTurn.id}/agents`)).json.error.code, 'turn_agents_unavailable');
  });

  it('limits each tenant\'s running turns and queue, round-robin across tenants, without touching the other tenant', async () => {
    fake.setDefaultStep({ kind: 'hang' });
    // a floods: one runs (its limit), two wait, the fourth finds a's queue full
    const flood = [];
    for (let index = 0; index < 4; index++) flood.push(await newTurn(a, `flood ${index}`));
    await waitForTenantTurn(a, flood[0].id, isRunning);
    assert.deepEqual(flood.slice(1, 3).map((turn) => turn.status), ['queued', 'queued']);
    assert.equal(flood[3].status, 'failed');
    assert.match(flood[3].error, /^tenant_turn_queue_full/);
    // b still starts at once: a's queue does not hold it back
    const bFirst = await newTurn(b, 'b first');
    await waitForTenantTurn(b, bFirst.id, isRunning);
    const bSecond = await newTurn(b, 'b second');
    assert.equal(bSecond.status, 'queued');
    // b's slot frees: b's next turn runs, not a's older queued ones (a is at its own limit)
    await b.request('POST', `/v1/turns/${bFirst.id}/cancel`);
    await waitForTenantTurn(b, bSecond.id, isRunning);
    // a's slot frees: a's queue moves in FIFO order
    await a.request('POST', `/v1/turns/${flood[0].id}/cancel`);
    await waitForTenantTurn(a, flood[1].id, isRunning);
    assert.equal((await a.request('GET', `/v1/turns/${flood[2].id}`)).json.status, 'queued');
    fake.setDefaultStep({ kind: 'reply' });
    for (const turn of [flood[1], flood[2], bSecond]) await (turn === bSecond ? b : a).request('POST', `/v1/turns/${turn.id}/cancel`);
  });

  it('counts event subscribers per tenant: 429 for the tenant at its limit, another tenant still subscribes', async () => {
    const first = a.events();
    await first.opened;
    const second = await a.request('GET', '/v1/events');
    assert.equal(second.status, 429);
    assert.equal(second.json.error.code, 'tenant_event_subscriber_limit');
    const other = b.events();
    await other.opened;
    first.close();
    other.close();
  });

  it('starts again on the existing tenant databases: data kept, live turns interrupted, event ids never reused', async () => {
    const events = b.events(0);
    await events.opened;
    const done = await newTurn(b, 'before restart');
    await events.waitForType('turn.completed', done.id);
    const lastId = Math.max(...events.events.map((event) => Number(event.id)));
    events.close();
    fake.setDefaultStep({ kind: 'hang' });
    const live = await newTurn(b, 'cut short');
    await waitForTenantTurn(b, live.id, isRunning);
    await hosted.stop();
    fake.setDefaultStep({ kind: 'reply' });
    hosted = await started.restart();
    [a, b, c] = hosted.tenants;
    assert.equal((await b.request('GET', `/v1/turns/${done.id}`)).json.status, 'completed');
    const interrupted = (await b.request('GET', `/v1/turns/${live.id}`)).json;
    assert.ok(['cancelled', 'failed'].includes(interrupted.status), interrupted.status);
    const after = b.events(0);
    await after.opened;
    const next = await newTurn(b, 'after restart');
    await after.waitForType('turn.completed', next.id);
    assert.ok(after.events.every((event) => Number(event.id) > lastId), 'ids continue above the earlier ones');
    after.close();
  });
});

async function waitFor(test: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
