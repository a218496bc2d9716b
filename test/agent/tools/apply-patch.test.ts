import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { applyPatchCustomTool, applyPatchFunctionTool } from '../../../src/agent/tools/apply-patch/apply-patch-tool.ts';
import { applyHunks } from '../../../src/agent/tools/apply-patch/apply.ts';
import { parsePatch, PatchError } from '../../../src/agent/tools/apply-patch/parse.ts';
import { ToolError } from '../../../src/agent/tools/types.ts';
import { makeContext, makeWorkspace, type Workspace } from './context.ts';
import { race, startSwapper } from './symlink-swapper.ts';

const patch = (...lines: string[]) => ['*** Begin Patch', ...lines, '*** End Patch'].join('\n');
const apply = (ws: Workspace, text: string) => applyPatchCustomTool.run(applyPatchCustomTool.parse(text), makeContext(ws));
const read = (ws: Workspace, name: string) => readFileSync(path.join(ws.cwd, name), 'utf8');
const write = (ws: Workspace, name: string, text: string) => {
  mkdirSync(path.dirname(path.join(ws.cwd, name)), { recursive: true });
  writeFileSync(path.join(ws.cwd, name), text);
};

test('add creates a file and its directories', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const outcome = await apply(ws, patch('*** Add File: src/new/hello.txt', '+hello', '+world'));
  assert.equal(outcome.output, 'Success. Updated the following files:\nA src/new/hello.txt');
  assert.equal(read(ws, 'src/new/hello.txt'), 'hello\nworld\n');
});

test('update replaces lines, tolerating trailing whitespace in the file', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  write(ws, 'a.ts', 'one\ntwo   \nthree\nfour\n');
  const outcome = await apply(ws, patch('*** Update File: a.ts', '@@', ' one', '-two', '+TWO', ' three'));
  assert.equal(outcome.output, 'Success. Updated the following files:\nM a.ts');
  assert.equal(read(ws, 'a.ts'), 'one\nTWO\nthree\nfour\n');
});

test('multiple hunks, @@ context jumps and End of File anchoring', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  write(ws, 'm.py', ['class A:', '    def f(self):', '        return 1', 'class B:', '    def f(self):', '        return 1', 'tail'].join('\n') + '\n');
  await apply(
    ws,
    patch(
      '*** Update File: m.py',
      '@@ class A:',
      ' def f(self):',
      '-        return 1',
      '+        return 10',
      '@@ class B:',
      '@@     def f(self):',
      '-        return 1',
      '+        return 20',
      '@@',
      '-tail',
      '+end',
      '*** End of File',
    ),
  );
  assert.equal(read(ws, 'm.py'), ['class A:', '    def f(self):', '        return 10', 'class B:', '    def f(self):', '        return 20', 'end'].join('\n') + '\n');
});

test('move renames with changes; delete removes', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  write(ws, 'old/name.txt', 'keep\nchange\n');
  write(ws, 'gone.txt', 'bye\n');
  const outcome = await apply(
    ws,
    patch('*** Update File: old/name.txt', '*** Move to: new/name.txt', '@@', ' keep', '-change', '+changed', '*** Delete File: gone.txt'),
  );
  assert.equal(outcome.output, 'Success. Updated the following files:\nM new/name.txt (moved from old/name.txt)\nD gone.txt');
  assert.equal(existsSync(path.join(ws.cwd, 'old/name.txt')), false);
  assert.equal(existsSync(path.join(ws.cwd, 'gone.txt')), false);
  assert.equal(read(ws, 'new/name.txt'), 'keep\nchanged\n');
});

test('a failing hunk leaves every file untouched', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  write(ws, 'first.txt', 'alpha\n');
  write(ws, 'second.txt', 'beta\n');
  write(ws, 'doomed.txt', 'still here\n');
  const text = patch(
    '*** Add File: created.txt',
    '+new',
    '*** Update File: first.txt',
    '-alpha',
    '+ALPHA',
    '*** Delete File: doomed.txt',
    '*** Update File: second.txt',
    '-this line is not in the file',
    '+x',
  );
  await assert.rejects(apply(ws, text), (error: Error) => {
    assert.ok(error instanceof ToolError);
    assert.match(error.message, /no file was changed: second.txt: could not find these lines:\nthis line is not in the file/);
    return true;
  });
  assert.equal(read(ws, 'first.txt'), 'alpha\n');
  assert.equal(read(ws, 'second.txt'), 'beta\n');
  assert.equal(read(ws, 'doomed.txt'), 'still here\n');
  assert.equal(existsSync(path.join(ws.cwd, 'created.txt')), false);
});

test('a write that fails midway restores what was already written', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  write(ws, 'first.txt', 'alpha\n');
  write(ws, 'blocker', 'a file where a directory is needed\n');
  await assert.rejects(apply(ws, patch('*** Update File: first.txt', '-alpha', '+ALPHA', '*** Add File: blocker/child.txt', '+x')));
  assert.equal(read(ws, 'first.txt'), 'alpha\n');
  assert.equal(read(ws, 'blocker'), 'a file where a directory is needed\n');
});

test('adding an existing file, updating or deleting a missing one, and moving onto a file are refused', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  write(ws, 'here.txt', 'x\n');
  write(ws, 'other.txt', 'y\n');
  await assert.rejects(apply(ws, patch('*** Add File: here.txt', '+y')), /already exists/);
  await assert.rejects(apply(ws, patch('*** Update File: nope.txt', '-a', '+b')), /no such file/);
  await assert.rejects(apply(ws, patch('*** Delete File: nope.txt')), /no such file/);
  await assert.rejects(apply(ws, patch('*** Update File: here.txt', '*** Move to: other.txt')), /destination exists/);
  assert.equal(read(ws, 'here.txt'), 'x\n');
});

test('paths outside every root are refused before anything is written', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  symlinkSync('/tmp', path.join(ws.cwd, 'tmp-link'));
  await assert.rejects(apply(ws, patch('*** Add File: ok.txt', '+x', '*** Add File: tmp-link/evil.txt', '+x')), /outside every allowed workspace root/);
  await assert.rejects(apply(ws, patch('*** Add File: ../../../escape.txt', '+x')), /outside every allowed workspace root/);
  assert.equal(existsSync(path.join(ws.cwd, 'ok.txt')), false);
});

test('the function shape takes {patch}; both shapes plan the same paths', (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const text = patch('*** Update File: a.txt', '*** Move to: b.txt', '*** Delete File: c.txt');
  const args = applyPatchFunctionTool.parse(JSON.stringify({ patch: text }));
  assert.deepEqual(applyPatchFunctionTool.plan(args, { cwd: ws.cwd, roots: [ws.root] }), { readOnly: false, paths: ['a.txt', 'b.txt', 'c.txt'] });
  assert.deepEqual(applyPatchCustomTool.plan(applyPatchCustomTool.parse(text), { cwd: ws.cwd, roots: [ws.root] }), { readOnly: false, paths: ['a.txt', 'b.txt', 'c.txt'] });
  assert.equal(applyPatchCustomTool.kind, 'custom');
  assert.equal(applyPatchFunctionTool.kind, 'function');
  assert.throws(() => applyPatchFunctionTool.parse('{}'), ToolError);
  assert.throws(() => applyPatchCustomTool.parse('not a patch'), /invalid patch: the first line/);
});

test('the parser rejects malformed patches with a line number', () => {
  assert.throws(() => parsePatch('*** Begin Patch\n*** Add File: a\n+x'), /last line must be/);
  assert.throws(() => parsePatch(patch('*** Add File: a', 'x')), /line 3: lines of an added file must start with "\+"/);
  assert.throws(() => parsePatch(patch('*** Update File: a', '!bad')), /line 3: hunk lines must start with/);
  assert.throws(() => parsePatch(patch('*** Frobnicate: a')), /expected a file header/);
  assert.throws(() => parsePatch(patch('*** Update File: a')), /has no changes/);
  assert.throws(() => parsePatch(patch()), PatchError);
  assert.deepEqual(parsePatch(`  \n${patch('*** Delete File:  spaced name.txt ')}\n\n`), [{ type: 'delete', path: 'spaced name.txt' }]);
});

test('hunks keep CRLF line endings and a missing final newline', () => {
  assert.equal(applyHunks('a\r\nb\r\n', [{ contexts: [], lines: [{ op: '-', text: 'b' }, { op: '+', text: 'B' }], endOfFile: false }], 'f'), 'a\r\nB\r\n');
  assert.equal(applyHunks('a\nb', [{ contexts: [], lines: [{ op: '-', text: 'b' }, { op: '+', text: 'B' }], endOfFile: false }], 'f'), 'a\nB');
  assert.equal(applyHunks('a\n', [{ contexts: [], lines: [{ op: '+', text: 'z' }], endOfFile: false }], 'f'), 'a\nz\n');
  assert.equal(applyHunks('', [{ contexts: [], lines: [{ op: '+', text: 'z' }], endOfFile: false }], 'f'), 'z\n');
  assert.equal(applyHunks('x\ny\n', [{ contexts: [], lines: [{ op: '-', text: '  y  ' }, { op: '+', text: 'Y' }], endOfFile: true }], 'f'), 'x\nY\n');
});

test('writes never go through a symlink swapped in after the check (race)', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const outside = path.join(path.dirname(ws.root), 'outside');
  mkdirSync(outside);
  // The outside copy matches the inside one, so a followed symlink would let every hunk apply.
  writeFileSync(path.join(outside, 'target.txt'), 'inside\n');
  write(ws, 'dir.real/target.txt', 'inside\n');
  write(ws, 'notes.txt', 'inside\n');
  const untouchedSince = statSync(path.join(outside, 'target.txt')).mtimeMs;
  const attacks = [
    { kind: 'file' as const, target: path.join(ws.cwd, 'notes.txt'), outside: path.join(outside, 'target.txt'), file: 'notes.txt' },
    { kind: 'directory' as const, target: path.join(ws.cwd, 'dir'), outside, file: 'dir/target.txt' },
  ];
  for (const attack of attacks) {
    const swapper = await startSwapper(attack.kind, attack.target, attack.outside, 'inside\n');
    let applied = 0;
    try {
      applied = await race(300, async (attempt) => {
        const newFile = `${path.dirname(attack.file)}/new-${attempt}.txt`;
        const text = patch(`*** Update File: ${attack.file}`, '-inside', '+inside', `*** Add File: ${newFile}`, '+new');
        const outcome = await apply(ws, text).catch(() => null);
        return outcome?.ok === true;
      });
    } finally {
      await swapper.stop();
    }
    assert.deepEqual(readdirSync(outside), ['target.txt'], `${attack.kind} swap: nothing may be created outside`);
    assert.equal(readFileSync(path.join(outside, 'target.txt'), 'utf8'), 'inside\n');
    assert.equal(statSync(path.join(outside, 'target.txt')).mtimeMs, untouchedSince, `${attack.kind} swap: the outside file was written`);
    assert.ok(applied > 0, `the ${attack.kind} race never let a patch through; the test proves nothing`);
  }
});
