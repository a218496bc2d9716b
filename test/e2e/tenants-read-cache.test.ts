import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeProvider } from '../support/fake-provider.ts';
import { waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';

/*
 * Session reads are answered from a cache of response bodies (runtime/session/session-read-cache.ts).
 * The attack: another tenant asks the very URL whose answer was just cached for alice.
 */
describe('cached session reads stay with their tenant (PostgreSQL, a database and role each)', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let alice!: TenantClient;
  let bob!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 2 });
  before(() => {
    ({ fake, hosted } = started);
    [alice, bob] = hosted.tenants;
  });

  const ids = (response: { json: { data: { id: string }[] } }) => response.json.data.map((session) => session.id);

  it('the same URL read by another tenant right after it was cached answers that tenant\'s own data', async () => {
    const secret = (await alice.request('POST', '/v1/sessions', { body: { title: 'alice secret title' } })).json;
    for (let round = 0; round < 2; round++) {
      assert.equal((await alice.request('GET', `/v1/sessions/${secret.id}`)).json.title, 'alice secret title');
      assert.deepEqual(ids(await alice.request('GET', '/v1/sessions?limit=50')), [secret.id]);
    }
    const stolen = await bob.request('GET', `/v1/sessions/${secret.id}`);
    assert.equal(stolen.status, 404);
    assert.equal(stolen.json.error.code, 'session_not_found');
    const bobPage = await bob.request('GET', '/v1/sessions?limit=50');
    assert.deepEqual(bobPage.json.data, []);
    assert.ok(!bobPage.text.includes('alice secret title'));

    // bob's own write and reads leave alice's answers hers, and the reverse
    const mine = (await bob.request('POST', '/v1/sessions', { body: { title: 'bob' } })).json;
    assert.deepEqual(ids(await bob.request('GET', '/v1/sessions?limit=50')), [mine.id]);
    assert.deepEqual(ids(await alice.request('GET', '/v1/sessions?limit=50')), [secret.id]);
    assert.equal((await alice.request('GET', `/v1/sessions/${mine.id}`)).status, 404);
  });

  it('a turn finishing in one tenant shows in that tenant\'s cached reads, and nowhere else', async () => {
    const session = (await alice.request('POST', '/v1/sessions', { body: {} })).json;
    for (let round = 0; round < 2; round++) {
      await alice.request('GET', `/v1/sessions/${session.id}`);
      await alice.request('GET', '/v1/sessions?limit=50');
      await bob.request('GET', '/v1/sessions?limit=50');
    }
    fake.enqueue({ kind: 'reply', text: 'ok', usage: { input: 9, output: 4, cached: 1 } });
    const turn = (await alice.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'count this' } })).json;
    assert.equal((await waitForTenantTurn(alice, turn.id)).status, 'completed');
    assert.deepEqual((await alice.request('GET', `/v1/sessions/${session.id}`)).json.usage, { input: 9, output: 4, cached: 1 });
    const alicePage = await alice.request('GET', '/v1/sessions?limit=50');
    assert.equal(alicePage.json.data[0].id, session.id);
    assert.equal(alicePage.json.data[0].title, 'count this');
    assert.ok(!ids(await bob.request('GET', '/v1/sessions?limit=50')).includes(session.id));
  });
});
