import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeTurnFiles } from '../../src/workspace/attachments.ts';
import { hostWorkspaceCommands } from '../support/workspace-commands.ts';

function workspace(t: { after(fn: () => void): void }) {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-attachments-')));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const cwd = path.join(top, 'root', 'project');
  const outside = path.join(top, 'outside');
  mkdirSync(cwd, { recursive: true });
  mkdirSync(outside);
  return { cwd, outside, commands: hostWorkspaceCommands([path.join(top, 'root')]) };
}

const files = [{ name: 'notes.txt', mimeType: 'text/plain', bytes: Buffer.from('attached') }];

test('files are written under <cwd>/.agentd/attachments/<turn> and removed by cleanup', async (t) => {
  const { cwd, commands } = workspace(t);
  const written = await writeTurnFiles(cwd, 'turn-1', files, commands);
  assert.deepEqual(written.paths, [path.join(cwd, '.agentd', 'attachments', 'turn-1', 'notes.txt')]);
  assert.equal(readFileSync(written.paths[0], 'utf8'), 'attached');
  await written.cleanup();
  assert.equal(existsSync(path.join(cwd, '.agentd', 'attachments', 'turn-1')), false);
});

for (const planted of ['.agentd', '.agentd/attachments', '.agentd/attachments/turn-1']) {
  test(`a symlink planted at ${planted} out of the roots is refused and nothing is written there`, async (t) => {
    const { cwd, outside, commands } = workspace(t);
    mkdirSync(path.dirname(path.join(cwd, planted)), { recursive: true });
    symlinkSync(outside, path.join(cwd, planted));
    await assert.rejects(writeTurnFiles(cwd, 'turn-1', files, commands), /symbolic link/);
    assert.deepEqual(readdirSync(outside), []);
  });
}
