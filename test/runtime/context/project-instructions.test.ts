// The project's AGENTS.md files for a turn (CONTRACT.md §19), read through the real host executor
// from real directories: which directories are walked, which files are passed over, the 32 KiB
// bound across files and the cut at a UTF-8 character boundary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorError, type ToolExecutor } from '../../../src/exec/executor.ts';
import { hostExecutor } from '../../../src/exec/host-executor.ts';
import { createProcessGroupRunner } from '../../../src/exec/process-group.ts';
import { readProjectInstructions, withProjectInstructions } from '../../../src/runtime/context/project-instructions.ts';

const executor = hostExecutor({ runner: createProcessGroupRunner() });
const HEADER = "# Project instructions\nThe project's AGENTS.md files, the outermost first; a deeper file refines the ones above it.\n\n";
const NOTE = '[AGENTS.md truncated: the project instructions are limited to 32 KiB]';
const LIMIT = 32 * 1024;

function tree(files: Record<string, string | Buffer>): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-instructions-')));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), content);
  }
  return root;
}

const read = (cwd: string, roots: string[], using: ToolExecutor = executor) => readProjectInstructions(using, { cwd, roots });

test('every AGENTS.md from the root that holds the cwd down to the cwd, outermost first, and no other', async () => {
  const root = tree({ 'AGENTS.md': 'top', 'a/AGENTS.md': 'middle', 'a/b/AGENTS.md': 'deep', 'c/AGENTS.md': 'aside', 'a/b/d/AGENTS.md': 'below' });
  const expected = `${HEADER}## ${root}/AGENTS.md\ntop\n\n## ${root}/a/AGENTS.md\nmiddle\n\n## ${root}/a/b/AGENTS.md\ndeep`;
  assert.equal(await read(join(root, 'a/b'), [root]), expected);
  assert.equal(await read(join(root, 'a/b'), [`${root}/`]), expected, 'a root written with a trailing slash');
  assert.equal(await read(root, [root]), `${HEADER}## ${root}/AGENTS.md\ntop`, 'the cwd is the root');
});

test('the deepest root that holds the cwd is where the walk starts; a root that only shares a prefix holds nothing', async () => {
  const root = tree({ 'AGENTS.md': 'top', 'a/AGENTS.md': 'middle', 'a/b/AGENTS.md': 'deep', 'ab/AGENTS.md': 'sibling' });
  const fromA = `${HEADER}## ${root}/a/AGENTS.md\nmiddle\n\n## ${root}/a/b/AGENTS.md\ndeep`;
  assert.equal(await read(join(root, 'a/b'), [root, join(root, 'a')]), fromA);
  assert.equal(await read(join(root, 'a/b'), [join(root, 'a'), root, join(root, 'c')]), fromA);
  // `${root}/a` is a prefix of `${root}/ab` but does not hold it: only the cwd's own file is read
  assert.equal(await read(join(root, 'ab'), [join(root, 'a')]), `${HEADER}## ${root}/ab/AGENTS.md\nsibling`);
  assert.equal(await read(join(root, 'a/b'), []), `${HEADER}## ${root}/a/b/AGENTS.md\ndeep`, 'no root: the cwd alone');
});

test('a missing file, a directory, a symbolic link and a blank file are passed over; none at all is null', async () => {
  const root = tree({ 'AGENTS.md/x': 'a directory named AGENTS.md', 'a/real.md': 'linked', 'a/b/AGENTS.md': ' \n\t\n', 'a/b/c/AGENTS.md': 'last' });
  symlinkSync(join(root, 'a/real.md'), join(root, 'a/AGENTS.md'));
  assert.equal(await read(join(root, 'a/b/c'), [root]), `${HEADER}## ${root}/a/b/c/AGENTS.md\nlast`);
  assert.equal(await read(join(root, 'a/b'), [root]), null);
});

test('32 KiB across all files: the file that crosses the bound is cut and marked, and nothing after it is read', async () => {
  const root = tree({ 'AGENTS.md': 'x'.repeat(20 * 1024), 'a/AGENTS.md': 'y'.repeat(20 * 1024), 'a/b/AGENTS.md': 'z' });
  const text = await read(join(root, 'a/b'), [root]);
  assert.equal(text, `${HEADER}## ${root}/AGENTS.md\n${'x'.repeat(20 * 1024)}\n\n## ${root}/a/AGENTS.md\n${'y'.repeat(12 * 1024)}\n${NOTE}`);
});

test('a file of exactly 32 KiB is whole and unmarked, and leaves no room for the next', async () => {
  const root = tree({ 'AGENTS.md': 'x'.repeat(LIMIT), 'a/AGENTS.md': 'y' });
  assert.equal(await read(join(root, 'a'), [root]), `${HEADER}## ${root}/AGENTS.md\n${'x'.repeat(LIMIT)}`);
  const over = tree({ 'AGENTS.md': 'x'.repeat(LIMIT + 1) });
  assert.equal(await read(over, [over]), `${HEADER}## ${over}/AGENTS.md\n${'x'.repeat(LIMIT)}\n${NOTE}`);
});

test('the cut falls on a UTF-8 character boundary: a character the bound splits is left out, a whole one kept', async () => {
  for (const character of ['é', '€', '😀']) {
    const width = Buffer.byteLength(character);
    for (let before = 1; before < width; before++) {
      // the character starts `before` bytes short of the bound: it is split, and left out
      const root = tree({ 'AGENTS.md': `${'a'.repeat(LIMIT - before)}${character}tail` });
      assert.equal(await read(root, [root]), `${HEADER}## ${root}/AGENTS.md\n${'a'.repeat(LIMIT - before)}\n${NOTE}`, `${character} cut after ${before} bytes`);
    }
    // the character ends exactly at the bound: kept whole
    const whole = tree({ 'AGENTS.md': `${'a'.repeat(LIMIT - width)}${character}tail` });
    assert.equal(await read(whole, [whole]), `${HEADER}## ${whole}/AGENTS.md\n${'a'.repeat(LIMIT - width)}${character}\n${NOTE}`, `${character} whole`);
  }
  // a short file ending in a multi-byte character is untouched
  const short = tree({ 'AGENTS.md': 'Grüße 😀' });
  assert.equal(await read(short, [short]), `${HEADER}## ${short}/AGENTS.md\nGrüße 😀`);
});

test('an executor that cannot answer is not taken for a missing file: the error reaches the turn runner', async () => {
  const root = tree({ 'AGENTS.md': 'top' });
  const failing = (error: Error): ToolExecutor => ({ ...executor, readFile: () => Promise.reject(error) });
  await assert.rejects(read(root, [root], failing(new ExecutorError('sandbox', 'the sandbox runner is gone'))), /sandbox runner is gone/);
  await assert.rejects(read(root, [root], failing(new Error('disk on fire'))), /disk on fire/);
  assert.equal(await read(root, [root], failing(new ExecutorError('operation', 'no such file'))), null);
});

test('the project instructions follow the server’s own, after a blank line; none leaves them as they are', () => {
  assert.equal(withProjectInstructions('own', null), 'own');
  assert.equal(withProjectInstructions('own', '# Project instructions'), 'own\n\n# Project instructions');
});
