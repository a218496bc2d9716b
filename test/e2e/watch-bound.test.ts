// --max-watches-per-tenant (CONTRACT.md §21, issue 39 item 5): one tenant opening many large trees
// through the server holds no more host inotify watches than its bound — counted by the kernel in
// /proc/<pid>/fdinfo of the server's process — and every turn's receipt is still right (by walking).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';
import { inotifyWatchCount } from '../support/inotify.ts';

const BOUND = 40;
const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('host watches of one tenant through the server', () => {
  const harness = useFakeServer({ args: ['--yolo', '--max-watches-per-tenant', String(BOUND)] });

  it(`stay within --max-watches-per-tenant ${BOUND} while its turns open trees of 30 directories, and every receipt lists the turn's writes`, async () => {
    const { fake, server } = harness;
    const baseline = inotifyWatchCount();
    const held: number[] = [];
    for (let index = 0; index < 5; index++) {
      const cwd = join(server.workspace, `tree-${index}`);
      for (let directory = 0; directory < 29; directory++) {
        mkdirSync(join(cwd, `d${directory}`), { recursive: true });
        writeFileSync(join(cwd, `d${directory}`, 'file.txt'), 'x\n');
      }
      const session = await harness.newSession({ cwd });
      for (const [call, file] of [['call_a', 'd3/one.txt'], ['call_b', 'd9/two.txt']]) {
        fake.enqueue({ kind: 'reply', toolCalls: [shell(call, `printf written > ${file}`)] }, { kind: 'reply', text: 'done' });
        const turn = await harness.submit(session.id, `write ${file}`);
        assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
        const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
        assert.deepEqual(result.output.changes, [{ path: file, kind: 'created', bytes: 7 }], `tree ${index}`);
        held.push(inotifyWatchCount(process.pid) - baseline);
      }
    }
    assert.ok(Math.max(...held) <= BOUND, `watches the server held after each turn: ${held.join(', ')}`);
    assert.ok(Math.max(...held) > 0, 'the server does watch within the bound');
  });
});
