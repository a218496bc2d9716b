import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';

const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

for (const backend of BACKENDS) {
  describe(`change receipts through the server on ${backend} (CONTRACT §20)`, () => {
    const harness = useFakeServer({ backend, args: ['--yolo'] });

    it('lists what shell and apply_patch created, modified, deleted and renamed, in the result and in history; unchanged files are not listed', async () => {
      const { fake, server } = harness;
      const cwd = join(server.workspace, 'project');
      mkdirSync(join(cwd, 'src'), { recursive: true });
      writeFileSync(join(cwd, 'src/keep.ts'), 'unchanged\n');
      writeFileSync(join(cwd, 'edit.txt'), 'one\n');
      writeFileSync(join(cwd, 'gone.txt'), 'bye\n');
      writeFileSync(join(cwd, 'old-name.txt'), 'moving\n');
      mkdirSync(join(cwd, '.git'));
      const session = await harness.newSession({ cwd });
      const patch = '*** Begin Patch\n*** Update File: edit.txt\n@@\n-one\n+one two\n*** Add File: src/new.ts\n+export {};\n*** End Patch';
      fake.enqueue(
        { kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_patch' }] },
        { kind: 'reply', toolCalls: [shell('call_sh', 'rm gone.txt && mv old-name.txt new-name.txt && printf 12345 > made.bin && touch tmp && rm tmp && echo x > .git/HEAD')] },
        { kind: 'reply', toolCalls: [shell('call_read', 'cat src/keep.ts')] },
        { kind: 'reply', text: 'done' },
      );
      const turn = await harness.submit(session.id, 'change things');
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const expected = [
        { path: 'edit.txt', kind: 'modified', bytes: 8 },
        { path: 'gone.txt', kind: 'deleted', bytes: 0 },
        { path: 'made.bin', kind: 'created', bytes: 5 },
        { path: 'new-name.txt', kind: 'created', bytes: 7 },
        { path: 'old-name.txt', kind: 'deleted', bytes: 0 },
        { path: 'src/new.ts', kind: 'created', bytes: 11 },
      ];
      const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.deepEqual(result.output.changes, expected);
      assert.equal(result.output.changesTruncated, false);
      const entry = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json.data.at(-1).turn;
      assert.deepEqual(entry.changes, expected);
      assert.equal(entry.changesTruncated, false);
    });

    it('a child agent\'s writes are on its turn\'s receipt', async () => {
      const { fake, server } = harness;
      const session = await harness.newSession();
      const tag = `RECEIPT-${backend}`;
      fake.route(`MAIN-${tag}`,
        { kind: 'reply', toolCalls: [{ name: 'spawn_agent', arguments: JSON.stringify({ label: 'writer', prompt: `CHILD-${tag}: write` }), callId: 'call_spawn' }] },
        { kind: 'reply', text: 'delegated' },
      );
      fake.route(`CHILD-${tag}`, { kind: 'reply', toolCalls: [shell('call_child', `printf abc > child-${backend}.txt`)] }, { kind: 'reply', text: 'written' });
      const turn = await harness.submit(session.id, `MAIN-${tag}: delegate`);
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.deepEqual(result.output.changes, [{ path: `child-${backend}.txt`, kind: 'created', bytes: 3 }]);
    });

    it('a turn without tools, and a turn of read-only calls, changes nothing', async () => {
      const { fake, server } = harness;
      const session = await harness.newSession();
      fake.enqueue({ kind: 'reply', text: 'hello' });
      const quiet = await harness.submit(session.id, 'hi');
      assert.equal((await waitForTurn(server, quiet.id)).status, 'completed');
      assert.deepEqual((await server.request('GET', `/v1/turns/${quiet.id}/result`)).json.output.changes, []);
      fake.enqueue({ kind: 'reply', toolCalls: [shell('call_ls', 'ls -la')] }, { kind: 'reply', text: 'listed' });
      const reading = await harness.submit(session.id, 'look');
      assert.equal((await waitForTurn(server, reading.id)).status, 'completed');
      const history = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json.data;
      assert.deepEqual(history.map((item: any) => item.turn.changes), [[], []]);
    });

    it('a cancelled turn keeps the receipt of what its tools did on its history entry', async () => {
      const { fake, server } = harness;
      const session = await harness.newSession();
      fake.enqueue({ kind: 'reply', toolCalls: [shell('call_slow', 'echo partial > partial.txt && sleep 30')] });
      const turn = await harness.submit(session.id, 'slow');
      await harness.events.waitFor(() => harness.events.ofTurn(turn.id).some((event) => event.type === 'tool.started' || event.type === 'tool.updated'));
      await new Promise((resolve) => setTimeout(resolve, 500));
      await server.request('POST', `/v1/turns/${turn.id}/cancel`);
      assert.equal((await waitForTurn(server, turn.id)).status, 'cancelled');
      const entry = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json.data.at(-1).turn;
      assert.deepEqual(entry.changes, [{ path: 'partial.txt', kind: 'created', bytes: 8 }]);
    });
  });
}
