// Host inotify watches bounded per tenant and per process (CONTRACT.md §21, issue 39 item 5):
// counted by the kernel's own list (/proc/self/fdinfo), with the receipts still right by walking.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TurnReceipt } from '../../src/runtime/turn/turn-receipt.ts';
import { WorkspaceWatches } from '../../src/workspace/workspace-watches.ts';
import { processWatchLimit, WatchBudget } from '../../src/workspace/watch-budget.ts';
import { inotifyWatchCount } from '../support/inotify.ts';

const scratch: string[] = [];
const watchSets: WorkspaceWatches[] = [];
after(() => {
  watchSets.forEach((watches) => watches.close());
  scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});

/** A tree of `directories` directories (the root and `d0`…), one file in each. */
function tree(directories: number): string {
  const root = mkdtempSync(join(tmpdir(), 'agentd-watch-budget-'));
  scratch.push(root);
  for (let index = 0; index < directories - 1; index++) {
    mkdirSync(join(root, `d${index}`));
    writeFileSync(join(root, `d${index}`, 'file.txt'), 'x\n');
  }
  return root;
}

const watchesWith = (budget: WatchBudget) => {
  const watches = new WorkspaceWatches({ maxEntries: 100_000, budget, idleMs: 3_600_000 });
  watchSets.push(watches);
  return watches;
};

/** One turn of one writing call on `root` through a receipt (released at its end, so its tree is then idle); the receipt's listed paths. */
async function writeThrough(watches: WorkspaceWatches, root: string, file: string): Promise<string[]> {
  const receipt = new TurnReceipt(watches, root);
  await receipt.around(async () => writeFileSync(join(root, file), 'written\n'));
  await receipt.release();
  return receipt.changes().changes.map((change) => change.path);
}

test('one tenant opening trees larger than its budget holds at most its budget of host watches, and every receipt is still right', async () => {
  const baseline = inotifyWatchCount();
  const tenant = new WatchBudget(40, new WatchBudget(1_000_000));
  const watches = watchesWith(tenant);
  const seen: number[] = [];
  for (let index = 0; index < 6; index++) {
    const root = tree(15);
    assert.deepEqual(await writeThrough(watches, root, `d3/new-${index}.txt`), [`d3/new-${index}.txt`]);
    // a second call on the same tree: watched or walked, the receipt is the same
    assert.deepEqual(await writeThrough(watches, root, 'd7/second.txt'), ['d7/second.txt']);
    seen.push(inotifyWatchCount() - baseline);
    assert.ok(tenant.inUse <= 40);
  }
  assert.ok(Math.max(...seen) <= 40, `host watches held: ${seen.join(', ')}`);
  assert.ok(Math.max(...seen) >= 15, 'trees within the budget are watched');
  watches.close();
  assert.equal(inotifyWatchCount() - baseline, 0, 'closing gives every watch back');
  assert.equal(tenant.inUse, 0);
});

test('the process bound holds across tenants: a second tenant walks when the first holds the process\'s watches', async () => {
  const baseline = inotifyWatchCount();
  const process = new WatchBudget(20);
  const first = watchesWith(new WatchBudget(4096, process));
  const second = watchesWith(new WatchBudget(4096, process));
  const held = tree(18);
  const { release } = await first.acquire(held); // a running turn: not idle, so not let go
  const starved = tree(10);
  assert.deepEqual(await writeThrough(second, starved, 'd2/walked.txt'), ['d2/walked.txt']);
  assert.deepEqual(await writeThrough(second, starved, 'd4/walked.txt'), ['d4/walked.txt']);
  assert.ok(inotifyWatchCount() - baseline <= 20, 'no more than the process bound');
  assert.equal(process.inUse, 18);
  release();
});

test('idle watches are let go as soon as a tree cannot be watched for want of them', async () => {
  const baseline = inotifyWatchCount();
  const budget = new WatchBudget(30, new WatchBudget(1_000_000));
  const watches = watchesWith(budget);
  const idle = tree(25);
  assert.deepEqual(await writeThrough(watches, idle, 'd1/a.txt'), ['d1/a.txt']);
  assert.equal(inotifyWatchCount() - baseline, 25, 'the first tree is watched and kept (idle) after its call');
  const next = tree(20);
  assert.deepEqual(await writeThrough(watches, next, 'd1/b.txt'), ['d1/b.txt']);
  // the idle tree was let go when the next could not be watched; the next tree's following look watches it
  assert.deepEqual(await writeThrough(watches, next, 'd2/c.txt'), ['d2/c.txt']);
  assert.equal(inotifyWatchCount() - baseline, 20);
});

test('the process bound is half the uid\'s host-wide watches', () => {
  const file = join(tree(1), 'max_user_watches');
  writeFileSync(file, '8192\n');
  assert.equal(processWatchLimit(file), 4096);
  assert.equal(processWatchLimit(join(tmpdir(), 'no-such-file-agentd')), 8192);
});
