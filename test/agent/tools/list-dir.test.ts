import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { listDirTool, MAX_LIST_ENTRIES } from '../../../src/agent/tools/list-dir.ts';
import { makeContext, makeWorkspace } from './context.ts';
import { race, startSwapper } from './symlink-swapper.ts';

const list = (input: object, ctx: ReturnType<typeof makeContext>) => listDirTool.run(listDirTool.parse(JSON.stringify(input)), ctx);

test('a sorted, indented tree to the requested depth; .git and node_modules not expanded', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  mkdirSync(path.join(ws.cwd, 'src', 'deep', 'deeper'), { recursive: true });
  mkdirSync(path.join(ws.cwd, 'node_modules', 'pkg'), { recursive: true });
  mkdirSync(path.join(ws.cwd, '.git', 'objects'), { recursive: true });
  writeFileSync(path.join(ws.cwd, 'b.txt'), '');
  writeFileSync(path.join(ws.cwd, 'src', 'a.ts'), '');
  symlinkSync('/etc', path.join(ws.cwd, 'etc-link'));
  const outcome = await list({}, makeContext(ws));
  assert.equal(
    outcome.output,
    ['./', '  .git/ (not expanded)', '  b.txt', '  etc-link@ -> /etc', '  node_modules/ (not expanded)', '  src/', '    a.ts', '    deep/'].join('\n'),
  );
  const shallow = await list({ path: 'src', depth: 1 }, makeContext(ws));
  assert.equal(shallow.output, 'src/\n  a.ts\n  deep/');
});

test('the listing is bounded', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  for (let i = 0; i < MAX_LIST_ENTRIES + 20; i++) writeFileSync(path.join(ws.cwd, `f${String(i).padStart(4, '0')}`), '');
  const outcome = await list({ depth: 1 }, makeContext(ws));
  assert.equal(outcome.truncated, true);
  assert.equal(outcome.output.split('\n').filter((line) => line.startsWith('  f')).length, MAX_LIST_ENTRIES);
  assert.match(outcome.output, /stopped after 500 entries/);
});

test('files, missing paths and paths outside the roots are refused', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'file'), '');
  const ctx = makeContext(ws);
  await assert.rejects(list({ path: 'file' }, ctx), /not a directory/);
  await assert.rejects(list({ path: 'nope' }, ctx), /does not exist/);
  await assert.rejects(list({ path: '/etc' }, ctx), /outside every allowed workspace root/);
  assert.equal((await list({ path: '..', depth: 1 }, ctx)).output, `${ws.root}/\n  project/`);
});

test('a directory swapped for a symlink out of the root is never listed (race)', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const outside = path.join(path.dirname(ws.root), 'outside');
  mkdirSync(path.join(outside, 'OUTSIDE-SUBDIR'), { recursive: true });
  writeFileSync(path.join(outside, 'OUTSIDE-ENTRY.txt'), 'secret\n');
  mkdirSync(path.join(ws.cwd, 'dir.real', 'inside-subdir'), { recursive: true });
  writeFileSync(path.join(ws.cwd, 'dir.real', 'inside-entry.txt'), 'x\n');
  const swapper = await startSwapper('directory', path.join(ws.cwd, 'dir'), outside);
  let insideListings = 0;
  try {
    insideListings = await race(400, async () => {
      const outcome = await list({ path: 'dir', depth: 2 }, makeContext(ws)).catch((error: Error) => ({ output: error.message }));
      assert.doesNotMatch(outcome.output, /OUTSIDE-/);
      return outcome.output.includes('inside-entry.txt');
    });
  } finally {
    await swapper.stop();
  }
  assert.ok(insideListings > 0, 'the race never let a listing through; the test proves nothing');
});
