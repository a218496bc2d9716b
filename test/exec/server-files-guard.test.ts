// The server-files guard resolves the server's files at every call, not once (CONTRACT.md §17;
// issue 39 item 8): a models file or state dir that appears after the first tool call is still
// unreadable and unlistable through the file tools.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProcessGroupRunner } from '../../src/exec/process-group.ts';
import { hostExecutor } from '../../src/exec/host-executor.ts';

const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-server-files-later-')));
after(() => rmSync(workspace, { recursive: true, force: true }));

test('a models file and a state dir created after the first tool call can be neither read, listed nor searched', async () => {
  const modelsFile = join(workspace, 'models.json');
  const stateDir = join(workspace, 'state');
  const executor = hostExecutor({ runner: createProcessGroupRunner(), serverFiles: [modelsFile, stateDir] });
  writeFileSync(join(workspace, 'notes.txt'), 'canary-91f2 in a note\n');
  // the first calls, while neither file exists
  assert.deepEqual((await executor.listDirectory(workspace)).entries.map((entry) => entry.name), ['notes.txt']);
  assert.deepEqual((await executor.readFile(join(workspace, 'notes.txt'), 100)).content.toString(), 'canary-91f2 in a note\n');

  writeFileSync(modelsFile, '{"canary":"canary-91f2 api key"}\n');
  mkdirSync(stateDir);
  writeFileSync(join(stateDir, 'agentd.sqlite'), 'canary-91f2 in the database\n');

  await assert.rejects(executor.readFile(modelsFile, 100), /one of agentd's own files/);
  await assert.rejects(executor.readFile(join(stateDir, 'agentd.sqlite'), 100), /one of agentd's own files/);
  await assert.rejects(executor.listDirectory(stateDir), /one of agentd's own files/);
  await assert.rejects(executor.writeFile(modelsFile, Buffer.from('{}')), /one of agentd's own files/);
  assert.deepEqual((await executor.listDirectory(workspace)).entries.map((entry) => entry.name), ['notes.txt'], 'left out of the listing');
  const found = await executor.search({ pattern: 'canary-91f2', path: workspace, maxMatches: 10, signal: new AbortController().signal });
  assert.deepEqual(found.matches.map((match) => match.path), [join(workspace, 'notes.txt')]);
});
