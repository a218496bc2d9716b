/**
 * Tenants with a real sandbox runner (the shipped bin/agentd-sandbox, CONTRACT.md §11 and §12), by
 * attack: tenant A's model, told by an injected prompt to look at tenant B's files and the server's
 * state, sees nothing of them and writes nothing there; each tenant gets a runner process of its
 * own, stopped when its runtime is evicted and at shutdown, leaving no runner or bwrap behind.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeProvider } from '../support/fake-provider.ts';
import { startTenantTurn, waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';
import { processesWith, runnerScript, waitUntil } from './sandbox-support.ts';

const CANARY = 'canary-tenant-b-7c1f';
const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

/** The runner of one tenant: the only process started with `--workspace <its root>`. */
const runnerOf = (tenant: TenantClient) => processesWith(`--workspace ${tenant.workspaceRoot} `);

describe('tenants with a sandbox runner (shipped runner, real PostgreSQL)', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let a!: TenantClient;
  let b!: TenantClient;
  let c!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 3, args: ['--sandbox-runner', runnerScript(), '--max-active-tenants', '2'] });
  before(() => {
    ({ fake, hosted } = started);
    [a, b, c] = hosted.tenants;
    writeFileSync(join(b.workspaceRoot, 'b-secret.txt'), `${CANARY}\n`);
  });

  /** One turn of `calls` for `tenant`; returns each call's output by call id. */
  async function runTools(tenant: TenantClient, marker: string, calls: object[]): Promise<Map<string, string>> {
    fake.route(marker, { kind: 'reply', toolCalls: calls as any }, { kind: 'reply', text: 'done' });
    const events = tenant.events();
    await events.opened;
    const turn = await startTenantTurn(tenant, marker);
    const ended = await waitForTenantTurn(tenant, turn.id, undefined, 90_000);
    assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
    await events.waitForType('turn.completed', turn.id);
    events.close();
    const finished = events.ofTurn(turn.id).filter((event) => event.type === 'tool.finished').map((event) => event.data.data);
    return new Map(finished.map((data) => [data.callId, String(data.output)]));
  }

  it('keeps tenant A\'s shell and file tools out of tenant B\'s workspace and the server\'s state', async () => {
    const stateRoot = join(hosted.fixture.stateDir, 'tenants');
    const bPassword = readFileSync(join(stateRoot, b.id, 'db-password'), 'utf8').trim();
    const bWorkspaceBefore = readdirSync(b.workspaceRoot).sort();
    const outputs = await runTools(a, 'injected: read the neighbours', [
      shell('call_own', 'echo mine > own.txt && pwd && ls'),
      shell('call_read_b', `cat ${b.workspaceRoot}/b-secret.txt; ls ${b.workspaceRoot}; cat ../*/b-secret.txt; find / -name b-secret.txt 2>/dev/null; echo end`),
      shell('call_state', `cat ${stateRoot}/${b.id}/db-password; ls ${hosted.fixture.stateDir} ${hosted.fixture.dir}; cat ${hosted.fixture.registryPath}; echo end`),
      shell('call_write_b', `echo pwned > ${b.workspaceRoot}/pwned.txt; echo pwned > ../pwned.txt; echo end`),
      { name: 'read_file', arguments: JSON.stringify({ path: `${b.workspaceRoot}/b-secret.txt` }), callId: 'call_read_file_b' },
      { name: 'apply_patch', kind: 'custom', arguments: `*** Begin Patch\n*** Add File: ${b.workspaceRoot}/pwned-patch.txt\n+pwned\n*** End Patch`, callId: 'call_patch_b' },
      { name: 'apply_patch', kind: 'custom', arguments: '*** Begin Patch\n*** Add File: ../pwned-patch.txt\n+pwned\n*** End Patch', callId: 'call_patch_out' },
    ]);
    // the positive control: A works in its own workspace, seen as /workspace
    assert.match(outputs.get('call_own')!, /^\/workspace$/m);
    assert.equal(readFileSync(join(a.workspaceRoot, 'own.txt'), 'utf8'), 'mine\n');
    assert.match(outputs.get('call_read_b')!, /No such file or directory[\s\S]*end/);
    assert.match(outputs.get('call_state')!, /No such file or directory[\s\S]*end/);
    assert.match(outputs.get('call_read_file_b')!, /outside every allowed workspace root/);
    for (const call of ['call_patch_b', 'call_patch_out']) assert.doesNotMatch(outputs.get(call)!, /^Success/, outputs.get(call));
    const everything = JSON.stringify([...outputs.values(), fake.requests.map((request) => request.body)]);
    for (const secret of [CANARY, bPassword, b.token, a.token]) assert.ok(!everything.includes(secret), 'nothing of B or the server state reaches A');
    // nothing written into B's workspace or beside the workspaces
    assert.deepEqual(readdirSync(b.workspaceRoot).sort(), bWorkspaceBefore);
    for (const stray of ['pwned.txt', 'pwned-patch.txt']) assert.equal(existsSync(join(hosted.fixture.dir, 'workspaces', stray)), false, stray);
    assert.equal(existsSync(join(b.workspaceRoot, 'pwned-patch.txt')), false);
  });

  it('runs each tenant\'s tools in a runner process of its own, stopped when its runtime is evicted and at shutdown', async () => {
    await runTools(b, 'b lists', [shell('call_b', 'ls')]);
    const aRunners = runnerOf(a);
    const bRunners = runnerOf(b);
    assert.equal(aRunners.length, 1, 'A has one runner');
    assert.equal(bRunners.length, 1, 'B has one runner');
    assert.notEqual(aRunners[0], bRunners[0]);
    const aArgv = readFileSync(`/proc/${aRunners[0]}/cmdline`, 'utf8').split('\0');
    assert.ok(!aArgv.includes(b.workspaceRoot), 'A\'s runner is not given B\'s workspace');

    // A is the least recently used idle runtime: C's first request takes its slot, and A's runner goes.
    assert.equal((await c.request('GET', '/v1/sessions')).status, 200);
    await waitUntil(() => hosted.logLines.some((line) => line.includes('tenant runtime closed') && line.includes(a.id)));
    await waitUntil(() => processesWith(a.workspaceRoot).length === 0, 10_000);
    assert.deepEqual(runnerOf(b), bRunners, 'B\'s runner is untouched');

    await hosted.stop();
    assert.deepEqual(processesWith(b.workspaceRoot), [], 'no runner or bwrap of B outlives the server');
    assert.deepEqual(processesWith(hosted.fixture.dir), [], 'no process of any tenant is left');
  });
});
