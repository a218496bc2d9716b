/**
 * Per-tenant disk and inode quotas (CONTRACT.md §17) and neutral guest paths, through the real
 * server, the shipped runner and the fake provider, as root: tenant A fills its file system to the
 * byte and inode limits and gets ENOSPC inside the guest while its turn goes on; tenant B, at the
 * same time, is unaffected; and nothing the guest can read (mountinfo, environment, error
 * messages) names a host path of the tenant, its id or the server's state.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeProvider } from '../support/fake-provider.ts';
import { startTenantTurn, waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';
import { processesWith, runnerScript } from './sandbox-support.ts';

const MiB = 1024 * 1024;
const QUOTA_BYTES = 16 * MiB;
const QUOTA_INODES = 200;
const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('tenant disk and inode quotas, neutral guest paths (shipped runner, real PostgreSQL, root)', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let a!: TenantClient;
  let b!: TenantClient;
  const started = useTenantsOnFakeProvider({
    tenantCount: 2,
    args: ['--sandbox-runner', runnerScript(), '--sandbox-disk-quota', '16M', '--sandbox-inode-quota', String(QUOTA_INODES)],
  });
  before(() => {
    ({ fake, hosted } = started);
    [a, b] = hosted.tenants;
  });

  /** One turn of `calls`, one after another, for `tenant`; returns each call's output by call id. */
  async function runTools(tenant: TenantClient, marker: string, calls: object[]): Promise<Map<string, string>> {
    fake.route(marker, ...calls.map((call) => ({ kind: 'reply' as const, toolCalls: [call as any] })), { kind: 'reply', text: 'done' });
    const events = tenant.events();
    await events.opened;
    const turn = await startTenantTurn(tenant, marker);
    const ended = await waitForTenantTurn(tenant, turn.id, undefined, 120_000);
    assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
    await events.waitForType('turn.completed', turn.id);
    events.close();
    const finished = events.ofTurn(turn.id).filter((event) => event.type === 'tool.finished').map((event) => event.data.data);
    return new Map(finished.map((data) => [data.callId, String(data.output)]));
  }

  it('fails A\'s writes past 16 MiB with ENOSPC inside the guest, the turn goes on, and B writes as before', async () => {
    const outputs = await runTools(a, 'a fills its bytes', [
      shell('call_fill', 'mkdir -p bytes && head -c 12M /dev/zero > bytes/fill && echo first-ok; head -c 8M /dev/zero > bytes/more; echo "more-exit=$?"; echo "more-size=$(stat -c %s bytes/more)"'),
      shell('call_after', 'rm bytes/more && echo alive > bytes/after.txt && cat bytes/after.txt'),
    ]);
    const fill = outputs.get('call_fill')!;
    assert.match(fill, /first-ok/, 'writing 12 MiB of a 16 MiB quota succeeds');
    assert.match(fill, /No space left on device/, fill);
    assert.match(fill, /more-exit=1/);
    const written = 12 * MiB + Number(/more-size=(\d+)/.exec(fill)![1]);
    assert.ok(written <= QUOTA_BYTES, `at most the quota is written (${written})`);
    assert.ok(written >= QUOTA_BYTES - 2 * MiB, `the file system's own bookkeeping takes at most 2 MiB of 16 (${written})`);
    assert.equal(outputs.get('call_after')!.trim().split('\n').pop(), 'alive', 'the next tool call of the same turn works once space is freed');
    // the host sees the tenant's tree where it always did
    assert.equal(statSync(join(a.workspaceRoot, 'bytes', 'fill')).size, 12 * MiB);

    // A is still full (12 MiB): B is not
    const bOutputs = await runTools(b, 'b writes', [shell('call_b', 'head -c 14M /dev/zero > b-fill && echo b-ok && rm b-fill')]);
    assert.match(bOutputs.get('call_b')!, /b-ok/);
    assert.doesNotMatch(bOutputs.get('call_b')!, /No space/);
    await runTools(a, 'a cleans bytes', [shell('call_clean', 'rm -rf bytes')]);
  });

  it('fails A\'s file creation past 200 inodes with ENOSPC; B creates files as before', async () => {
    const outputs = await runTools(a, 'a fills its inodes', [
      shell('call_inodes', 'mkdir -p inodes && cd inodes && i=0; while : > "f$i" 2>/dev/null; do i=$((i+1)); done; echo "created=$i"; : > one-more; echo "exit=$?"'),
      shell('call_after', 'rm -rf inodes && echo alive > after.txt && cat after.txt'),
    ]);
    const fill = outputs.get('call_inodes')!;
    const created = Number(/created=(\d+)/.exec(fill)![1]);
    assert.ok(created <= QUOTA_INODES, `no more than the quota (${created})`);
    assert.ok(created >= QUOTA_INODES - 40, `up to the quota, less the file system's own few (${created})`);
    assert.match(fill, /one-more: No space left on device/, fill);
    assert.match(fill, /exit=1/);
    assert.equal(outputs.get('call_after')!.trim().split('\n').pop(), 'alive');

    const bOutputs = await runTools(b, 'b creates files', [shell('call_b', 'mkdir -p many && cd many && for i in $(seq 1 150); do : > "f$i" || exit 1; done && echo b-ok && cd .. && rm -rf many')]);
    assert.match(bOutputs.get('call_b')!, /b-ok/);
  });

  it('shows the guest no host path, tenant id or runner pid in mountinfo, the environment or error messages', async () => {
    const outputs = await runTools(a, 'a looks around', [
      shell('call_look', 'cat /proc/self/mountinfo; echo ---; env; echo ---; cat /proc/1/cmdline | tr "\\0" " "; echo; cat /nonexistent/file; cd /nowhere; ls -la /workspace/.. /home'),
    ]);
    const seen = outputs.get('call_look')!;
    // the positive control: this is the guest's mount table, with its workspace and home in it
    assert.match(seen, / \/workspace \/workspace rw/, seen);
    assert.match(seen, / \/home \/home\/agent /, seen);
    const runnerPids = processesWith(`--workspace ${a.workspaceRoot} `);
    assert.ok(runnerPids.length > 0, 'A\'s runner runs');
    const forbidden = [a.id, b.id, a.workspaceRoot, b.workspaceRoot, hosted.fixture.stateDir, hosted.fixture.dir, ...runnerPids.map((pid) => `agentd-sandbox-${pid}`)];
    // nor, in its mount table, the runner's temporary directory (bwrap's argv, /proc/1/cmdline, still names it: random, no tenant)
    assert.doesNotMatch(seen.split('---')[0], /agentd-sandbox-etc-/);
    assert.match(seen, / \/passwd \/etc\/passwd ro,.* - tmpfs agentd-etc /, 'the generated /etc files come from a tmpfs of the runner\'s own');
    for (const text of forbidden) assert.ok(!seen.includes(text), `the guest sees nothing of ${text}:\n${seen}`);
    assert.ok(!seen.includes(readFileSync(join(hosted.fixture.stateDir, 'tenants', a.id, 'db-password'), 'utf8').trim()));
  });
});
