/**
 * Revert in a sandbox (CONTRACT.md §20 with §12 and §17): with --sandbox-runner the turn's tools
 * write inside the guest, and so does the revert (the guest's node, through the executor, on the
 * guest path); the files on the host come back byte for byte, and a symlink the guest put in place
 * of a directory makes the revert refuse rather than write through it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';
import { runnerScript } from './sandbox-support.ts';

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
    await turnOf(harness, session.id, [shell('call_swap', 'mkdir -p /tmp/twin && echo after > /tmp/twin/f.txt && rm -r dir && ln -s /tmp/twin dir')]);
    const refused = await server.request('POST', `/v1/turns/${edit}/revert`);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, 'revert_conflict');
    assert.deepEqual(refused.json.error.details.paths, ['dir/f.txt']);
    assert.ok(lstatSync(join(cwd, 'dir')).isSymbolicLink());
  });
});
