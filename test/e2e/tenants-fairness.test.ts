/**
 * One tenant cannot starve or slow another (issue 13, CONTRACT.md §11): with one running slot for
 * the whole server, turns start round-robin across tenants however long one tenant's queue is;
 * and a tenant whose SSE subscriber stops reading does not cost another tenant's fast subscriber
 * a single event.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { drainRawEventStream, openRawEventStream } from '../support/events.ts';
import { startTenantServer, startTenantTurn, waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';

describe('fairness: one global running slot, two tenants', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let a!: TenantClient;
  let b!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 2, args: ['--max-concurrent-turns', '1'] });
  before(() => {
    ({ fake, hosted } = started);
    [a, b] = hosted.tenants;
  });

  it('starts turns round-robin across tenants while tenant A floods its queue', async () => {
    fake.route('fair a0', { kind: 'hang' });
    const first = await startTenantTurn(a, 'fair a0');
    await waitForTenantTurn(a, first.id, (turn) => turn.status === 'running');
    // `running` is stored before the model request leaves: wait for it, so it is not counted below
    while (!fake.requests.some((request) => JSON.stringify(request.body).includes('fair a0'))) await new Promise((resolve) => setTimeout(resolve, 10));
    // A floods its queue before B asks for anything
    const submitted: { tenant: TenantClient; name: string; turn: any }[] = [{ tenant: a, name: 'a0', turn: first }];
    for (let index = 1; index <= 6; index++) submitted.push({ tenant: a, name: `a${index}`, turn: await startTenantTurn(a, `fair a${index}`) });
    for (let index = 1; index <= 3; index++) submitted.push({ tenant: b, name: `b${index}`, turn: await startTenantTurn(b, `fair b${index}`) });
    for (const { turn } of submitted.slice(1)) assert.equal(turn.status, 'queued');

    const requestsBefore = fake.requests.length;
    await a.request('POST', `/v1/turns/${first.id}/cancel`);
    const ended = await Promise.all(submitted.slice(1).map(({ tenant, turn }) => waitForTenantTurn(tenant, turn.id)));
    assert.deepEqual(ended.map((turn) => turn.status), ended.map(() => 'completed'));

    // The model saw the turns in the order they started: one slot, so one at a time.
    const names = submitted.map(({ name }) => name);
    const startOrder = fake.requests.slice(requestsBefore).map((request) => names.find((name) => JSON.stringify(request.body).includes(`fair ${name}`)));
    assert.deepEqual(startOrder, ['a1', 'b1', 'a2', 'b2', 'a3', 'b3', 'a4', 'a5', 'a6']);
    // startedAt agrees: each turn started after the one before it had finished
    const byName = new Map(submitted.slice(1).map(({ name }, index) => [name, ended[index]]));
    for (let index = 1; index < startOrder.length; index++) {
      const previous = byName.get(startOrder[index - 1]!)!;
      const current = byName.get(startOrder[index]!)!;
      assert.ok(current.startedAt >= previous.finishedAt, `${startOrder[index]} started ${current.startedAt}, before ${startOrder[index - 1]} finished ${previous.finishedAt}`);
    }
  });

  it('records the turn past a tenant\'s full queue as failed while the other tenant\'s turns still start', async () => {
    const limited = await startTenantServer({
      tenantCount: 2,
      models: fakeProviderModels(fake.baseUrl),
      args: ['--max-concurrent-turns', '1', '--max-queued-turns-per-tenant', '2'],
    });
    try {
      const [x, y] = limited.tenants;
      fake.route('full x0', { kind: 'hang' });
      const running = await startTenantTurn(x, 'full x0');
      await waitForTenantTurn(x, running.id, (turn) => turn.status === 'running');
      const queued = [await startTenantTurn(x, 'full x1'), await startTenantTurn(x, 'full x2')];
      const refused = await startTenantTurn(x, 'full x3');
      assert.equal(refused.status, 'failed');
      assert.match(refused.error, /^tenant_turn_queue_full/);
      const other = await startTenantTurn(y, 'full y1');
      assert.equal(other.status, 'queued', 'y waits for the one slot like everybody, but is accepted');
      await x.request('POST', `/v1/turns/${running.id}/cancel`);
      // y's turn starts second, before x's older queued one
      const requestsBefore = fake.requests.length;
      await waitForTenantTurn(y, other.id);
      for (const turn of queued) await waitForTenantTurn(x, turn.id);
      const order = fake.requests.slice(requestsBefore).map((request) => ['x1', 'x2', 'y1'].find((name) => JSON.stringify(request.body).includes(`full ${name}`)));
      assert.deepEqual(order, ['x1', 'y1', 'x2']);
    } finally {
      await limited.close();
    }
  });
});

describe('a slow SSE consumer of one tenant', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  const started = useTenantsOnFakeProvider({ tenantCount: 2, args: ['--max-concurrent-turns', '4', '--event-replay-limit', '40'] });
  before(() => ({ fake, hosted } = started));

  it('does not cost the other tenant\'s fast subscriber a single event, nor a replay.reset', async () => {
    const [a, b] = hosted.tenants;
    const slow = await openRawEventStream(hosted.url, { authorization: `Bearer ${a.token}` });
    assert.equal(slow.statusCode, 200);
    slow.pause();
    const fast = b.events();
    await fast.opened;

    // A pushes 6.4 MB at its stalled subscriber (more than the socket buffers and the 40-event
    // replay window hold) while B's turns run.
    const flood = (async () => {
      let lastTurnId = '';
      for (let round = 0; round < 4; round++) {
        const words = Array.from({ length: 100 }, (_, index) => `${round}.${index}${'z'.repeat(16_000)}`);
        fake.route(`flood ${round}`, { kind: 'reply', text: words.join(' ') });
        const turn = await startTenantTurn(a, `flood ${round}`);
        await waitForTenantTurn(a, turn.id, undefined, 30_000);
        lastTurnId = turn.id;
      }
      return lastTurnId;
    })();
    const bTurns: string[] = [];
    for (let round = 0; round < 4; round++) {
      fake.route(`steady ${round}`, { kind: 'reply', text: Array.from({ length: 50 }, (_, index) => `b${round}.${index}`).join(' ') });
      const turn = await startTenantTurn(b, `steady ${round}`);
      await waitForTenantTurn(b, turn.id, undefined, 30_000);
      bTurns.push(turn.id);
    }
    const aLastTurn = await flood;

    for (const turnId of bTurns) {
      await fast.waitForType('turn.completed', turnId, 30_000);
      const deltas = fast.ofTurn(turnId).filter((event) => event.type === 'response.text.delta');
      assert.equal(deltas.length, 50, 'every delta of b\'s turn');
    }
    assert.ok(!fast.events.some((event) => event.type === 'replay.reset'), 'no reset for the fast subscriber');
    assert.ok(fast.events.every((event) => event.data.turnId == null || bTurns.includes(event.data.turnId)), 'only b\'s own turns');
    const ids = fast.events.map((event) => Number(event.id));
    for (let index = 1; index < ids.length; index++) assert.equal(ids[index], ids[index - 1] + 1, 'b\'s ids have no gap');
    fast.close();

    // The slow one really was overrun: once it reads again it is told to refetch.
    const text = await drainRawEventStream(slow, `"type":"turn.completed","turnId":"${aLastTurn}"`);
    assert.ok(/event: replay\.reset\ndata: \{"reason":"event_gap","refetch":true\}\n\n/.test(text), `a's stalled subscriber gets a gap reset (read ${text.length} characters)`);
  });
});
