/**
 * Revert in a sandbox (CONTRACT.md §20 with §12 and §17), single-user and in a tenant: with
 * --sandbox-runner the turn's tools
 * write inside the guest, and so does the revert (the guest's node, through the executor, on the
 * guest path); the files on the host come back byte for byte, and a symlink the guest put in place
 * of a directory makes the revert refuse rather than write through it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';
import { runnerScript } from './sandbox-support.ts';
import { startTenantTurn, waitForTenantTurn } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';

const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

async function turnOf(harness: FakeServerHarness, sessionId: string, calls: object[]): Promise<string> {
  harness.fake.enqueue({ kind: 'reply', toolCalls: calls as any }, { kind: 'reply', text: 'done' });
  const turn = await harness.submit(sessionId, 'work in the sandbox');
  const ended = await waitForTurn(harness.server, turn.id, 90_000);
  assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
  return turn.id;
}

describe('revert of a sandboxed turn (shipped runner)', () => {
  const harness = useFakeServer({ args: ['--sandbox-runner', runnerScript()] });

  it('writes the files back inside the sandbox; a swapped-in symlink is a conflict', async () => {
    const { server } = harness;
    const cwd = join(server.workspace, 'boxed');
    mkdirSync(join(cwd, 'dir'), { recursive: true });
    writeFileSync(join(cwd, 'edit.txt'), 'one\n');
    writeFileSync(join(cwd, 'gone.bin'), Buffer.from([0, 1, 2, 255]));
    writeFileSync(join(cwd, 'dir/f.txt'), 'before\n');
    const session = await harness.newSession({ cwd });
    const first = await turnOf(harness, session.id, [shell('call_edit', 'echo two >> edit.txt && rm gone.bin && echo made > made.txt && chmod 700 edit.txt')]);
    const result = (await server.request('GET', `/v1/turns/${first}/result`)).json;
    assert.deepEqual(result.output.changes.map((change: any) => `${change.kind} ${change.path}`), ['modified edit.txt', 'deleted gone.bin', 'created made.txt']);

    const reverted = await server.request('POST', `/v1/turns/${first}/revert`);
    assert.equal(reverted.status, 200, JSON.stringify(reverted.json));
    assert.deepEqual(reverted.json.reverted, ['edit.txt', 'gone.bin', 'made.txt']);
    assert.equal(readFileSync(join(cwd, 'edit.txt'), 'utf8'), 'one\n');
    assert.equal(statSync(join(cwd, 'edit.txt')).mode & 0o777, 0o644);
    assert.deepEqual([...readFileSync(join(cwd, 'gone.bin'))], [0, 1, 2, 255]);
    assert.throws(() => statSync(join(cwd, 'made.txt')));

    const edit = await turnOf(harness, session.id, [shell('call_dir', 'echo after > dir/f.txt')]);
    // The directory itself moves out of the session directory (to /workspace/twin, which the guest
    // keeps between commands, unlike its /tmp) and a link takes its place: the file the link leads
    // to is the turn's after-version still, so only not following the link keeps the revert off it.
    await turnOf(harness, session.id, [shell('call_swap', 'mv dir ../twin && ln -s ../twin dir')]);
    const refused = await server.request('POST', `/v1/turns/${edit}/revert`);
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.equal(refused.json.error.code, 'revert_conflict');
    assert.deepEqual(refused.json.error.details.paths, ['dir/f.txt']);
    assert.ok(lstatSync(join(cwd, 'dir')).isSymbolicLink());
    assert.equal(readFileSync(join(server.workspace, 'twin', 'f.txt'), 'utf8'), 'after\n', 'the link\'s target exists, and nothing was written through the link');
    assert.deepEqual(readdirSync(join(server.workspace, 'twin')), ['f.txt']);
  });
});

describe('revert of a turn in a sandboxed tenant (shipped runner, real PostgreSQL)', () => {
  const started = useTenantsOnFakeProvider({ tenantCount: 1, args: ['--sandbox-runner', runnerScript()] });

  it('writes the tenant\'s files back inside its sandbox', async () => {
    const { fake, hosted } = started;
    const [tenant] = hosted.tenants;
    writeFileSync(join(tenant.workspaceRoot, 'notes.txt'), 'tenant notes\n');
    const marker = 'tenant revert: edit the notes';
    fake.route(marker, { kind: 'reply', toolCalls: [shell('call_tenant', 'echo scribbled > notes.txt && echo extra > extra.txt')] }, { kind: 'reply', text: 'done' });
    const turn = await startTenantTurn(tenant, marker);
    assert.equal((await waitForTenantTurn(tenant, turn.id, undefined, 90_000)).status, 'completed');
    assert.equal(readFileSync(join(tenant.workspaceRoot, 'notes.txt'), 'utf8'), 'scribbled\n');
    const guestOwner = statSync(join(tenant.workspaceRoot, 'extra.txt')).uid;
    // a root server's guest is an unprivileged host user: the owner then tells who wrote a file
    if (process.getuid?.() === 0) assert.notEqual(guestOwner, 0);
    const reverted = await tenant.request('POST', `/v1/turns/${turn.id}/revert`);
    assert.equal(reverted.status, 200, JSON.stringify(reverted.json));
    assert.deepEqual(reverted.json.reverted, ['extra.txt', 'notes.txt']);
    assert.equal(readFileSync(join(tenant.workspaceRoot, 'notes.txt'), 'utf8'), 'tenant notes\n');
    assert.equal(statSync(join(tenant.workspaceRoot, 'notes.txt')).uid, guestOwner, 'written back by the guest, not by the server');
    assert.throws(() => statSync(join(tenant.workspaceRoot, 'extra.txt')));
    const again = await tenant.request('POST', `/v1/turns/${turn.id}/revert`);
    assert.equal(again.json.error.code, 'revert_conflict');
  });
});
