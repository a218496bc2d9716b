import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync, chmodSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { TurnReceipt } from '../../../src/runtime/turn/turn-receipt.ts';
import { snapshotTree } from '../../../src/workspace/tree-snapshot.ts';
import { WorkspaceWatches } from '../../../src/workspace/workspace-watches.ts';

const scratch: string[] = [];
const watchSets: WorkspaceWatches[] = [];
after(() => {
  watchSets.forEach((watches) => watches.close());
  scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});
/** A receipt on its own watches; maxWatchedDirectories 0 forces the walking fallback. */
const receiptOf = (cwd: string, options: { maxEntries?: number; maxWatchedDirectories?: number } = {}) => {
  const watches = new WorkspaceWatches({ maxEntries: options.maxEntries ?? 100_000, maxWatchedDirectories: options.maxWatchedDirectories });
  watchSets.push(watches);
  return new TurnReceipt(watches, cwd);
};
const workspace = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-receipt-'));
  scratch.push(dir);
  return dir;
};
const touch = async (run: () => void) => run();

test('created then deleted within the turn is not listed; a mode change is a modification', async () => {
  const cwd = workspace();
  writeFileSync(join(cwd, 'script.sh'), 'echo\n');
  const receipt = receiptOf(cwd);
  await receipt.around(() => touch(() => writeFileSync(join(cwd, 'scratch.txt'), 'x')));
  await receipt.around(() => touch(() => unlinkSync(join(cwd, 'scratch.txt'))));
  await receipt.around(() => touch(() => chmodSync(join(cwd, 'script.sh'), 0o755)));
  assert.deepEqual(receipt.changes(), { changes: [{ path: 'script.sh', kind: 'modified', bytes: 5 }], changesTruncated: false });
});

test('a file deleted and created again is modified, and a rename is a deletion and a creation', async () => {
  const cwd = workspace();
  writeFileSync(join(cwd, 'a.txt'), 'a');
  writeFileSync(join(cwd, 'b.txt'), 'b');
  const receipt = receiptOf(cwd);
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
  const receipt = receiptOf(cwd);
  await assert.rejects(receipt.around(async () => {
    writeFileSync(join(cwd, 'half.txt'), 'half');
    throw new Error('the call failed');
  }));
  assert.deepEqual(receipt.changes().changes, [{ path: 'half.txt', kind: 'created', bytes: 4 }]);
});

test('overlapping calls (child agents) each count, in whatever order they end', async () => {
  const cwd = workspace();
  const receipt = receiptOf(cwd);
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
  const receipt = receiptOf(cwd);
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
  const receipt = receiptOf(cwd, { maxEntries: 10 });
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

for (const mode of ['watched', 'walked'] as const) {
  const options = mode === 'walked' ? { maxWatchedDirectories: 0 } : {};

  test(`${mode}: a shell command's writes in new and renamed directories, in place and by mode, are seen`, async () => {
    const cwd = workspace();
    mkdirSync(join(cwd, 'src/deep'), { recursive: true });
    writeFileSync(join(cwd, 'src/deep/a.ts'), 'a');
    writeFileSync(join(cwd, 'append.txt'), 'one\n');
    writeFileSync(join(cwd, 'mode.sh'), 'echo\n');
    const receipt = receiptOf(cwd, options);
    await receipt.around(async () => {
      execFileSync('sh', ['-c', 'echo two >> append.txt && mkdir -p new/inner && printf x > new/inner/b.txt && mv src lib && chmod 700 mode.sh'], { cwd });
    });
    assert.deepEqual(receipt.changes().changes, [
      { path: 'append.txt', kind: 'modified', bytes: 8 },
      { path: 'lib/deep/a.ts', kind: 'created', bytes: 1 },
      { path: 'mode.sh', kind: 'modified', bytes: 5 },
      { path: 'new/inner/b.txt', kind: 'created', bytes: 1 },
      { path: 'src/deep/a.ts', kind: 'deleted', bytes: 0 },
    ]);
  });

  test(`${mode}: changes made between calls belong to no call, and the next turn on the same directory sees only its own`, async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'a.txt'), 'a');
    const watches = new WorkspaceWatches({ maxEntries: 1000, ...options });
    watchSets.push(watches);
    const first = new TurnReceipt(watches, cwd);
    await first.around(async () => writeFileSync(join(cwd, 'first.txt'), '1'));
    writeFileSync(join(cwd, 'editor.txt'), 'typed by someone else');
    await first.around(async () => writeFileSync(join(cwd, 'a.txt'), 'aa'));
    await first.release();
    const second = new TurnReceipt(watches, cwd);
    await second.around(async () => rmSync(join(cwd, 'first.txt')));
    await second.release();
    assert.deepEqual(first.changes().changes.map((change) => change.path), ['a.txt', 'first.txt']);
    assert.deepEqual(second.changes().changes, [{ path: 'first.txt', kind: 'deleted', bytes: 0 }]);
  });

  test(`${mode}: a directory replaced by a file, and a symlink put where a directory was, end what was below them`, async () => {
    const cwd = workspace();
    const elsewhere = workspace();
    writeFileSync(join(elsewhere, 'outside.txt'), 'x');
    mkdirSync(join(cwd, 'dir'));
    writeFileSync(join(cwd, 'dir/in.txt'), 'in');
    mkdirSync(join(cwd, 'other'));
    writeFileSync(join(cwd, 'other/in.txt'), 'in');
    const receipt = receiptOf(cwd, options);
    await receipt.around(async () => {
      rmSync(join(cwd, 'dir'), { recursive: true });
      writeFileSync(join(cwd, 'dir'), 'now a file');
      rmSync(join(cwd, 'other'), { recursive: true });
      symlinkSync(elsewhere, join(cwd, 'other'));
    });
    // later writes through the link land outside the cwd: not the turn's files, never listed
    await receipt.around(async () => writeFileSync(join(elsewhere, 'outside.txt'), 'changed'));
    assert.deepEqual(receipt.changes().changes, [
      { path: 'dir', kind: 'created', bytes: 10 },
      { path: 'dir/in.txt', kind: 'deleted', bytes: 0 },
      { path: 'other', kind: 'created', bytes: elsewhere.length },
      { path: 'other/in.txt', kind: 'deleted', bytes: 0 },
    ]);
  });
}

test('attack: a directory swapped for a link out of the workspace after it was looked at is never entered', async () => {
  const cwd = workspace();
  const outside = workspace();
  writeFileSync(join(outside, 'other-tenant-secret.txt'), 'theirs');
  mkdirSync(join(cwd, 'd'));
  writeFileSync(join(cwd, 'd', 'own.txt'), 'own');
  let swapped = false;
  // The guest's move, at the worst moment for the host: d was seen as a directory and is about to be read.
  const snapshot = await snapshotTree(cwd, {
    maxEntries: 100,
    onDirectory: (relative) => {
      if (relative !== 'd') return;
      renameSync(join(cwd, 'd'), join(cwd, 'd.real'));
      symlinkSync(outside, join(cwd, 'd'));
      swapped = true;
    },
  });
  assert.ok(swapped, 'the swap happened during the walk');
  const names = [...snapshot.entries.keys()];
  assert.ok(!names.some((name) => name.includes('other-tenant-secret')), `the walk went through the link: ${names}`);
})

test('a root reached through a symlink is not walked', async () => {
  const cwd = workspace();
  writeFileSync(join(cwd, 'file.txt'), 'x');
  const link = join(workspace(), 'link');
  symlinkSync(cwd, link);
  const snapshot = await snapshotTree(link, { maxEntries: 100 });
  assert.deepEqual([...snapshot.entries.keys()], []);
  assert.equal(snapshot.incomplete, true);
  assert.deepEqual([...(await snapshotTree(cwd, { maxEntries: 100 })).entries.keys()], ['file.txt']);
});
