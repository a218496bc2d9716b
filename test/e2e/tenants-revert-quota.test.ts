/**
 * Revert content counts against the tenant's disk quota (CONTRACT.md §21, issue 39 item 6), through
 * the real server, the shipped runner and real PostgreSQL, as root: the bytes a turn's revert keeps
 * are held on the tenant's 16 MiB file system too (what the guest may write shrinks by them), and
 * when the quota has no room for a new turn's, the oldest turn's go, which then answers 409
 * revert_unavailable, though --revert-bytes-per-tenant (1 GiB) is far away.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeProvider } from '../support/fake-provider.ts';
import { waitForTenantTurn, type TenantClient } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';
import { runnerScript } from './sandbox-support.ts';

const KEPT = 900_000;
const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('revert content counted against a tenant\'s disk quota (shipped runner, real PostgreSQL, root)', () => {
  let fake!: FakeProvider;
  let tenant!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 1, args: ['--sandbox-runner', runnerScript(), '--sandbox-disk-quota', '16M', '--sandbox-inode-quota', '200'] });
  before(() => {
    ({ fake } = started);
    [tenant] = started.hosted.tenants;
  });

  let turns = 0;
  async function turnOf(sessionId: string, command: string): Promise<string> {
    const marker = `revert quota turn ${++turns}`;
    // one session, turn after turn: the common queue (a route follows the session's first message)
    fake.enqueue({ kind: 'reply', toolCalls: [shell(`call_${turns}`, command)] }, { kind: 'reply', text: 'done' });
    const turn = await tenant.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input: marker } });
    assert.equal(turn.status, 202, JSON.stringify(turn.json));
    assert.equal((await waitForTenantTurn(tenant, turn.json.id, undefined, 120_000)).status, 'completed');
    return turn.json.id;
  }
  const available = () => {
    const stats = statfsSync(tenant.workspaceRoot);
    return stats.bavail * stats.bsize;
  };

  it('holds a turn\'s kept bytes on the tenant\'s file system, and drops the oldest turn\'s when the quota has no room for the next', async () => {
    const session = await tenant.request('POST', '/v1/sessions', { body: {} });
    assert.equal(session.status, 201);
    // two files whose earlier bytes the next turns keep, and a filler that leaves about 1.4 MB free
    await turnOf(session.json.id, `head -c ${KEPT} /dev/urandom > a.bin && head -c ${KEPT} /dev/urandom > b.bin && head -c $(( $(df --output=avail -B1 . | tail -1) - 1400000 )) /dev/zero > fill && sync`);
    const b = readFileSync(join(tenant.workspaceRoot, 'b.bin'));
    const freeBefore = available();
    const first = await turnOf(session.json.id, 'printf x >> a.bin');
    const freeAfter = available();
    assert.ok(freeBefore - freeAfter >= KEPT, `the kept ${KEPT} bytes take room on the tenant's file system (free ${freeBefore} → ${freeAfter})`);
    const second = await turnOf(session.json.id, 'printf y >> b.bin'); // 1.8 MB kept would not fit the ~1.4 MB room
    const dropped = await tenant.request('POST', `/v1/turns/${first}/revert`);
    assert.equal(dropped.status, 409, JSON.stringify(dropped.json));
    assert.equal(dropped.json.error.code, 'revert_unavailable');
    assert.match(dropped.json.error.message, /dropped to keep the tenant's revert content within/);
    const reverted = await tenant.request('POST', `/v1/turns/${second}/revert`);
    assert.equal(reverted.status, 200, JSON.stringify(reverted.json));
    assert.deepEqual(readFileSync(join(tenant.workspaceRoot, 'b.bin')), b);
  });
});
