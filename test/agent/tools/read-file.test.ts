import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readFileTool } from '../../../src/agent/tools/read-file.ts';
import { ToolError } from '../../../src/agent/tools/types.ts';
import { makeContext, makeWorkspace } from './context.ts';
import { race, startSwapper } from './symlink-swapper.ts';

const read = (input: object, ctx: ReturnType<typeof makeContext>) => readFileTool.run(readFileTool.parse(JSON.stringify(input)), ctx);

test('lines come back numbered from 1', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'a.txt'), 'alpha\nbeta\ngamma\n');
  const outcome = await read({ path: 'a.txt' }, makeContext(ws));
  assert.equal(outcome.output, '     1\talpha\n     2\tbeta\n     3\tgamma');
  assert.equal(outcome.truncated, false);
});

test('offset and limit select a 1-based range and say where to continue', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'n.txt'), Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n'));
  const outcome = await read({ path: 'n.txt', offset: 4, limit: 2 }, makeContext(ws));
  assert.equal(outcome.output, '     4\tline 4\n     5\tline 5\n[… more lines follow; continue with offset=6 …]');
  const tail = await read({ path: 'n.txt', offset: 9 }, makeContext(ws));
  assert.equal(tail.output, '     9\tline 9\n    10\tline 10');
  await assert.rejects(read({ path: 'n.txt', offset: 11 }, makeContext(ws)), /past the end .*10 lines/);
});

test('output beyond the budget is cut at a line boundary and marked truncated', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'big.txt'), Array.from({ length: 5000 }, () => 'x'.repeat(100)).join('\n'));
  const outcome = await read({ path: 'big.txt', limit: 5000 }, makeContext(ws));
  assert.equal(outcome.truncated, true);
  assert.ok(outcome.output.length <= 64 * 1024 + 100);
  assert.match(outcome.output, /continue with offset=\d+/);
});

test('very long lines are clipped', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'wide.txt'), 'y'.repeat(5000));
  const outcome = await read({ path: 'wide.txt' }, makeContext(ws));
  assert.match(outcome.output, /line cut at 2000 characters/);
  assert.ok(outcome.output.length < 2100);
});

test('binary files, directories, missing files and escapes are refused', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'image.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
  mkdirSync(path.join(ws.cwd, 'dir'));
  symlinkSync('/etc/hostname', path.join(ws.cwd, 'host'));
  const ctx = makeContext(ws);
  await assert.rejects(read({ path: 'image.bin' }, ctx), /binary file/);
  await assert.rejects(read({ path: 'dir' }, ctx), /is a directory; use list_dir/);
  await assert.rejects(read({ path: 'missing.txt' }, ctx), /does not exist/);
  await assert.rejects(read({ path: 'host' }, ctx), /outside every allowed workspace root/);
  await assert.rejects(read({ path: '../../../../etc/passwd' }, ctx), ToolError);
});

test('an empty file says so; arguments are validated', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'empty.txt'), '');
  assert.equal((await read({ path: 'empty.txt' }, makeContext(ws))).output, 'empty.txt is empty');
  assert.throws(() => readFileTool.parse('{}'), ToolError);
  assert.throws(() => readFileTool.parse('{"path":"a","offset":0}'), ToolError);
  assert.deepEqual(readFileTool.plan(readFileTool.parse('{"path":"a"}'), { cwd: '/', roots: [] }), { readOnly: true, paths: ['a'] });
});

test('a symlink swapped in between the check and the read is never followed (race)', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const outside = path.join(path.dirname(ws.root), 'outside');
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'OUTSIDE-SECRET\n');
  writeFileSync(path.join(ws.cwd, 'notes.txt'), 'inside text\n');
  mkdirSync(path.join(ws.cwd, 'dir.real'));
  writeFileSync(path.join(ws.cwd, 'dir.real', 'secret.txt'), 'inside text\n');
  const attacks = [
    { kind: 'file' as const, target: path.join(ws.cwd, 'notes.txt'), outside: path.join(outside, 'secret.txt'), requested: 'notes.txt' },
    { kind: 'directory' as const, target: path.join(ws.cwd, 'dir'), outside, requested: 'dir/secret.txt' },
  ];
  for (const attack of attacks) {
    const swapper = await startSwapper(attack.kind, attack.target, attack.outside, 'inside text\n');
    let insideReads = 0;
    try {
      insideReads = await race(400, async () => {
        const outcome = await read({ path: attack.requested }, makeContext(ws)).catch((error: Error) => ({ output: error.message }));
        assert.doesNotMatch(outcome.output, /OUTSIDE-SECRET/, `${attack.kind} swap leaked the outside file`);
        return outcome.output.includes('inside text');
      });
    } finally {
      await swapper.stop();
    }
    assert.ok(insideReads > 0, `the ${attack.kind} race never let a read through; the test proves nothing`);
  }
});
