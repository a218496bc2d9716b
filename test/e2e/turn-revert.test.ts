/**
 * POST /v1/turns/:id/revert through the real server (CONTRACT.md §20, issue 32 item 2): a turn
 * that creates, edits, deletes and renames files through shell and apply_patch is written back
 * byte for byte and mode for mode; a conflict touches nothing; each refusal has its code; a
 * symlink swapped in for a directory by a later turn cannot lead the revert's writes outside.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';

const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });
const patchCall = (callId: string, patch: string) => ({ name: 'apply_patch', kind: 'custom', arguments: patch, callId });

/** One completed turn of the given tool calls. */
async function turnOf(harness: FakeServerHarness, sessionId: string, calls: object[]): Promise<string> {
  harness.fake.enqueue({ kind: 'reply', toolCalls: calls as any }, { kind: 'reply', text: 'done' });
  const turn = await harness.submit(sessionId, `run ${calls.length} calls`);
  const ended = await waitForTurn(harness.server, turn.id);
  assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
  return turn.id;
}

const revert = (harness: FakeServerHarness, turnId: string) => harness.server.request('POST', `/v1/turns/${turnId}/revert`);

/** Every file below `dir` (not .git) with its bytes and mode, to compare trees. */
function treeOf(dir: string, prefix = ''): Record<string, string> {
  const tree: Record<string, string> = {};
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const relative = prefix ? `${prefix}/${name}` : name;
    const stats = lstatSync(join(dir, relative));
    if (stats.isDirectory()) Object.assign(tree, treeOf(dir, relative));
    else tree[relative] = `${(stats.mode & 0o7777).toString(8)} ${readFileSync(join(dir, relative)).toString('base64')}`;
  }
  return tree;
}

for (const backend of BACKENDS) {
  describe(`revert of a turn through the server on ${backend} (CONTRACT §20)`, () => {
    const harness = useFakeServer({ backend, args: ['--yolo', '--revert-history', '3'] });

    it('writes back what shell and apply_patch created, edited, deleted and renamed, bytes and modes; a second revert is a conflict', async () => {
      const { server } = harness;
      const cwd = join(server.workspace, `revert-${backend}`);
      mkdirSync(join(cwd, 'src'), { recursive: true });
      writeFileSync(join(cwd, 'src/keep.ts'), 'unchanged\n');
      writeFileSync(join(cwd, 'edit.txt'), 'one\n');
      writeFileSync(join(cwd, 'gone.txt'), 'bye\n');
      writeFileSync(join(cwd, 'old-name.txt'), 'moving\n');
      writeFileSync(join(cwd, 'image.bin'), Buffer.from([0, 255, 1, 254, 0, 0, 10, 13]));
      writeFileSync(join(cwd, 'run.sh'), '#!/bin/sh\necho hi\n');
      chmodSync(join(cwd, 'run.sh'), 0o755);
      mkdirSync(join(cwd, 'doomed'));
      writeFileSync(join(cwd, 'doomed/inside.txt'), 'in a directory the turn removes\n');
      const before = treeOf(cwd);
      const session = await harness.newSession({ cwd });
      const events = harness.events;
      const turnId = await turnOf(harness, session.id, [
        patchCall('call_patch', '*** Begin Patch\n*** Update File: edit.txt\n@@\n-one\n+one two\n*** Add File: src/new.ts\n+export {};\n*** End Patch'),
        shell('call_sh', 'rm gone.txt && mv old-name.txt new-name.txt && printf \'\\000\\001\\002\' > made.bin && printf \'\\377\' >> image.bin && chmod 600 run.sh && rm -r doomed && mkdir -p fresh/deep && echo x > fresh/deep/f.txt'),
      ]);
      const changes = (await server.request('GET', `/v1/turns/${turnId}/result`)).json.output.changes;
      assert.deepEqual(changes.map((change: any) => `${change.kind} ${change.path}`), [
        'deleted doomed/inside.txt', 'modified edit.txt', 'created fresh/deep/f.txt', 'deleted gone.txt', 'modified image.bin',
        'created made.bin', 'created new-name.txt', 'deleted old-name.txt', 'modified run.sh', 'created src/new.ts',
      ]);

      const reverted = await revert(harness, turnId);
      assert.equal(reverted.status, 200, JSON.stringify(reverted.json));
      assert.deepEqual(reverted.json.reverted, changes.map((change: any) => change.path));
      assert.deepEqual(treeOf(cwd), before);
      assert.equal(statSync(join(cwd, 'run.sh')).mode & 0o777, 0o755);
      assert.deepEqual(readdirSync(cwd).filter((name) => name.startsWith('.agentd-revert')), []);
      await events.waitFor(() => events.ofTurn(turnId).some((event) => event.type === 'turn.reverted'));
      assert.deepEqual(events.ofTurn(turnId).find((event) => event.type === 'turn.reverted')!.data.data, { paths: reverted.json.reverted });

      const again = await revert(harness, turnId);
      assert.equal(again.status, 409);
      assert.equal(again.json.error.code, 'revert_conflict');
      assert.deepEqual(again.json.error.details.paths, reverted.json.reverted);
      assert.deepEqual(treeOf(cwd), before);
    });

    it('refuses with the paths that changed since, and touches nothing', async () => {
      const { server } = harness;
      const cwd = join(server.workspace, `conflict-${backend}`);
      mkdirSync(cwd, { recursive: true });
      writeFileSync(join(cwd, 'a.txt'), 'a0\n');
      writeFileSync(join(cwd, 'b.txt'), 'b0\n');
      const session = await harness.newSession({ cwd });
      const first = await turnOf(harness, session.id, [shell('call_ab', 'echo a1 > a.txt && echo b1 > b.txt && echo c1 > c.txt')]);
      await turnOf(harness, session.id, [shell('call_b', 'echo b2 > b.txt')]);
      writeFileSync(join(cwd, 'c.txt'), 'edited by the user\n');
      const after = treeOf(cwd);
      const refused = await revert(harness, first);
      assert.equal(refused.status, 409);
      assert.equal(refused.json.error.code, 'revert_conflict');
      assert.deepEqual(refused.json.error.details.paths, ['b.txt', 'c.txt']);
      assert.deepEqual(treeOf(cwd), after);
    });

    it('each refusal: unknown turn, active turn, pruned beyond --revert-history, a file too large to keep, a turn over the cap', async () => {
      const { server, fake } = harness;
      const cwd = join(server.workspace, `refusals-${backend}`);
      mkdirSync(cwd, { recursive: true });
      writeFileSync(join(cwd, 'big.bin'), Buffer.alloc(1024 * 1024 + 1, 7));
      const session = await harness.newSession({ cwd });

      const unknown = await server.request('POST', '/v1/turns/0190a5b2-0000-7000-8000-000000000000/revert');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error.code, 'turn_not_found');

      const big = await turnOf(harness, session.id, [shell('call_big', 'printf more >> big.bin')]);
      const tooLarge = await revert(harness, big);
      assert.equal(tooLarge.status, 409);
      assert.equal(tooLarge.json.error.code, 'revert_unavailable');
      assert.match(tooLarge.json.error.message, /big\.bin/);

      // 17 distinct files of 1,000,000 bytes: each is kept, but together they pass the 16 MiB a turn may keep
      for (let index = 0; index < 17; index++) writeFileSync(join(cwd, `m${index}.bin`), Buffer.alloc(1_000_000, index));
      const many = await turnOf(harness, session.id, [shell('call_many', 'for f in m*.bin; do printf x >> "$f"; done')]);
      const overCap = await revert(harness, many);
      assert.equal(overCap.status, 409);
      assert.equal(overCap.json.error.code, 'revert_unavailable');
      assert.match(overCap.json.error.message, /more than the 16777216 kept per turn/);
      assert.equal(statSync(join(cwd, 'm0.bin')).size, 1_000_001);

      const oldest = await turnOf(harness, session.id, [shell('call_1', 'echo 1 > one.txt')]);
      // a turn without a writing call keeps nothing and reverts to nothing; it does not push older turns out
      harness.fake.enqueue({ kind: 'reply', text: 'only words' });
      const quiet = (await harness.submit(session.id, 'just talk')).id;
      assert.equal((await waitForTurn(server, quiet)).status, 'completed');
      const nothing = await revert(harness, quiet);
      assert.equal(nothing.status, 200);
      assert.deepEqual(nothing.json, { reverted: [] });
      const second = await turnOf(harness, session.id, [shell('call_2', 'echo 2 > n2.txt')]);
      await turnOf(harness, session.id, [shell('call_3', 'echo 3 > n3.txt')]);
      const stillKept = await revert(harness, oldest);
      assert.equal(stillKept.status, 200, 'the third writing turn back is kept with --revert-history 3');
      assert.ok(!existsSync(join(cwd, 'one.txt')));
      for (const index of [4, 5]) await turnOf(harness, session.id, [shell(`call_${index}`, `echo ${index} > n${index}.txt`)]);
      const pruned = await revert(harness, second);
      assert.equal(pruned.status, 409);
      assert.equal(pruned.json.error.code, 'revert_unavailable');
      assert.match(pruned.json.error.message, /--revert-history/);
      assert.equal(readFileSync(join(cwd, 'n2.txt'), 'utf8'), '2\n');

      fake.enqueue({ kind: 'reply', toolCalls: [shell('call_slow', 'sleep 30')] });
      const busy = await harness.submit(session.id, 'slow');
      await harness.events.waitFor(() => harness.events.ofTurn(busy.id).some((event) => event.type === 'tool.updated'));
      const recent = (await server.request('GET', `/v1/turns?sessionId=${session.id}`)).json.data.find((turn: any) => turn.status === 'completed');
      for (const turnId of [busy.id, recent.id]) {
        const whileActive = await revert(harness, turnId);
        assert.equal(whileActive.status, 409);
        assert.equal(whileActive.json.error.code, 'session_busy');
      }
      await server.request('POST', `/v1/turns/${busy.id}/cancel`);
      assert.equal((await waitForTurn(server, busy.id)).status, 'cancelled');
    });

    it('a directory swapped for a symlink by a later turn cannot lead the revert outside the workspace (attack)', async () => {
      const { server } = harness;
      const cwd = join(server.workspace, `attack-${backend}`);
      const outside = mkdtempSync(join(tmpdir(), 'agentd-revert-outside-'));
      try {
        mkdirSync(join(cwd, 'dir'), { recursive: true });
        writeFileSync(join(cwd, 'dir/f.txt'), 'before\n');
        const session = await harness.newSession({ cwd });
        const edit = await turnOf(harness, session.id, [shell('call_edit', 'echo after > dir/f.txt && echo new > dir/g.txt')]);
        // the later turn leaves a twin of the edited directory outside, and a link to it in its place
        writeFileSync(join(outside, 'f.txt'), 'after\n');
        writeFileSync(join(outside, 'g.txt'), 'new\n');
        await turnOf(harness, session.id, [shell('call_swap', `rm -r dir && ln -s ${outside} dir`)]);
        const refused = await revert(harness, edit);
        assert.equal(refused.status, 409);
        assert.equal(refused.json.error.code, 'revert_conflict');
        assert.deepEqual(refused.json.error.details.paths, ['dir/f.txt', 'dir/g.txt']);
        assert.deepEqual(treeOf(outside), { 'f.txt': `644 ${Buffer.from('after\n').toString('base64')}`, 'g.txt': `644 ${Buffer.from('new\n').toString('base64')}` });
        assert.ok(lstatSync(join(cwd, 'dir')).isSymbolicLink());
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
    });
  });
}

describe('--revert-history 0 keeps nothing', () => {
  const harness = useFakeServer({ args: ['--yolo', '--revert-history', '0'] });
  it('answers revert_unavailable', async () => {
    const session = await harness.newSession();
    const turnId = await turnOf(harness, session.id, [shell('call_w', 'echo w > w.txt')]);
    const refused = await revert(harness, turnId);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, 'revert_unavailable');
    assert.ok(existsSync(join(harness.server.workspace, 'w.txt')));
  });
});
