import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync, chmodSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TurnReceipt } from '../../../src/runtime/turn/turn-receipt.ts';
import { snapshotTree } from '../../../src/workspace/tree-snapshot.ts';

const scratch: string[] = [];
after(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const workspace = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-receipt-'));
  scratch.push(dir);
  return dir;
};
const touch = async (run: () => void) => run();

test('created then deleted within the turn is not listed; a mode change is a modification', async () => {
  const cwd = workspace();
  writeFileSync(join(cwd, 'script.sh'), 'echo\n');
  const receipt = new TurnReceipt(cwd);
  await receipt.around(() => touch(() => writeFileSync(join(cwd, 'scratch.txt'), 'x')));
  await receipt.around(() => touch(() => unlinkSync(join(cwd, 'scratch.txt'))));
  await receipt.around(() => touch(() => chmodSync(join(cwd, 'script.sh'), 0o755)));
  assert.deepEqual(receipt.changes(), { changes: [{ path: 'script.sh', kind: 'modified', bytes: 5 }], changesTruncated: false });
});

test('a file deleted and created again is modified, and a rename is a deletion and a creation', async () => {
  const cwd = workspace();
  writeFileSync(join(cwd, 'a.txt'), 'a');
  writeFileSync(join(cwd, 'b.txt'), 'b');
  const receipt = new TurnReceipt(cwd);
  await receipt.around(() => touch(() => unlinkSync(join(cwd, 'a.txt'))));
  await receipt.around(() => touch(() => writeFileSync(join(cwd, 'a.txt'), 'again')));
  await receipt.around(() => touch(() => renameSync(join(cwd, 'b.txt'), join(cwd, 'c.txt'))));
  assert.deepEqual(receipt.changes().changes, [
    { path: 'a.txt', kind: 'modified', bytes: 5 },
    { path: 'b.txt', kind: 'deleted', bytes: 0 },
    { path: 'c.txt', kind: 'created', bytes: 1 },
  ]);
});

test('a call that throws still leaves its changes on the receipt', async () => {
  const cwd = workspace();
  const receipt = new TurnReceipt(cwd);
  await assert.rejects(receipt.around(async () => {
    writeFileSync(join(cwd, 'half.txt'), 'half');
    throw new Error('the call failed');
  }));
  assert.deepEqual(receipt.changes().changes, [{ path: 'half.txt', kind: 'created', bytes: 4 }]);
});

test('overlapping calls (child agents) each count, in whatever order they end', async () => {
  const cwd = workspace();
  const receipt = new TurnReceipt(cwd);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const slow = receipt.around(async () => {
    await gate;
    writeFileSync(join(cwd, 'slow.txt'), 'slow');
  });
  await receipt.around(() => touch(() => writeFileSync(join(cwd, 'fast.txt'), 'fast!')));
  release();
  await slow;
  assert.deepEqual(receipt.changes().changes.map((change) => change.path), ['fast.txt', 'slow.txt']);
});

test('at most 1,000 changes are listed, then changesTruncated', async () => {
  const cwd = workspace();
  const receipt = new TurnReceipt(cwd);
  await receipt.around(() => touch(() => {
    for (let index = 0; index < 1001; index++) writeFileSync(join(cwd, `f${String(index).padStart(4, '0')}`), '');
  }));
  const { changes, changesTruncated } = receipt.changes();
  assert.equal(changes.length, 1000);
  assert.equal(changesTruncated, true);
});

test('a cwd larger than the watch is marked truncated rather than reported as unchanged', async () => {
  const cwd = workspace();
  for (let index = 0; index < 20; index++) writeFileSync(join(cwd, `f${index}`), '');
  const receipt = new TurnReceipt(cwd, 10);
  await receipt.around(() => touch(() => writeFileSync(join(cwd, 'f0'), 'changed')));
  assert.equal(receipt.changes().changesTruncated, true);
});

test('the walk never follows a symlink (a link out of the cwd is one entry) and skips .git', async () => {
  const cwd = workspace();
  const elsewhere = workspace();
  writeFileSync(join(elsewhere, 'outside.txt'), 'x');
  symlinkSync(elsewhere, join(cwd, 'link'));
  mkdirSync(join(cwd, '.git'));
  writeFileSync(join(cwd, '.git', 'HEAD'), 'ref');
  const snapshot = await snapshotTree(cwd, { maxEntries: 100 });
  assert.deepEqual([...snapshot.entries.keys()], ['link']);
  assert.equal(snapshot.entries.get('link')!.type, 'l');
});
