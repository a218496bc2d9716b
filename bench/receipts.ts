/**
 * The change receipt's cost (CONTRACT.md §20, issue 32): what watching one writing tool call adds
 * to a turn whose cwd holds 10,000 files in 100 directories, the call itself being one small file
 * write. Each round is one turn with one such call, on the boundary's kept WorkspaceWatches
 * (src/workspace/workspace-watches.ts), alternating two ways in the same minutes:
 *
 * - kept: as the server runs by default (--revert-history above 0): watched, and the bytes of
 *   every file kept for revert, so a settle also reads and hashes each reported file;
 * - watched: the directories are watched (inotify), a settle looks only at the names reported;
 * - walked: the fallback (no watch), a metadata walk of the whole cwd before and after the call,
 *   which is what every call cost before the watch.
 *
 * Prints p50 and p90 of wall time (the call's own small write included: subtracting a separately
 * timed write left negative figures on a busy machine) and of this process's CPU time (user + system) over BENCH_CALLS
 * turns each (default 50) after 5 to warm up, the first turn's cost (the walk that opens the
 * watch), and the machine's load average.
 *
 *   node --import tsx bench/receipts.ts
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_WATCHED_ENTRIES, TurnReceipt } from '../src/runtime/turn/turn-receipt.ts';
import { WorkspaceWatches } from '../src/workspace/workspace-watches.ts';
import { DEFAULT_STORE_BYTES } from '../src/workspace/content-store.ts';
import { fixed, percentile, printFigure, runIfMain } from './support/report.ts';

const TARGET_MS = 5;

interface Cost {
  wallMs: number;
  cpuMs: number;
}

async function oneTurn(watches: WorkspaceWatches, cwd: string, round: number): Promise<Cost> {
  const target = join(cwd, 'd7', 'f7.ts');
  const receipt = new TurnReceipt(watches, cwd);
  const cpu = process.cpuUsage();
  const watched = performance.now();
  await receipt.around(async () => writeFileSync(target, `// again ${round}\n`));
  await receipt.release();
  const wallMs = performance.now() - watched;
  const used = process.cpuUsage(cpu);
  if (receipt.changes().changes.length !== 1) throw new Error('the receipt missed the write');
  return { wallMs, cpuMs: (used.user + used.system) / 1000 };
}

runIfMain(import.meta.url, async () => {
  const calls = Number(process.env.BENCH_CALLS ?? 50);
  const cwd = mkdtempSync(join(tmpdir(), 'agentd-bench-receipts-'));
  const ways = {
    kept: new WorkspaceWatches({ maxEntries: MAX_WATCHED_ENTRIES, keptContentBytes: DEFAULT_STORE_BYTES }),
    watched: new WorkspaceWatches({ maxEntries: MAX_WATCHED_ENTRIES }),
    walked: new WorkspaceWatches({ maxEntries: MAX_WATCHED_ENTRIES, maxWatchedDirectories: 0 }),
  };
  try {
    for (let directory = 0; directory < 100; directory++) {
      mkdirSync(join(cwd, `d${directory}`));
      for (let file = 0; file < 100; file++) writeFileSync(join(cwd, `d${directory}`, `f${file}.ts`), 'export {};\n');
    }
    const first = await oneTurn(ways.watched, cwd, -100);
    const firstKept = await oneTurn(ways.kept, cwd, -101);
    const costs: Record<keyof typeof ways, Cost[]> = { kept: [], watched: [], walked: [] };
    for (let round = -5; round < calls; round++) {
      for (const way of Object.keys(ways) as (keyof typeof ways)[]) {
        const cost = await oneTurn(ways[way], cwd, round);
        if (round >= 0) costs[way].push(cost);
      }
    }
    const load = loadavg().map((value) => fixed(value)).join(' ');
    for (const way of Object.keys(ways) as (keyof typeof ways)[]) {
      const wall = costs[way].map((cost) => cost.wallMs);
      const cpu = costs[way].map((cost) => cost.cpuMs);
      const p50 = percentile(wall, 0.5);
      printFigure({
        name: `Receipt cost of a turn that changes one file, 10,000 files in the cwd, ${way}`,
        value: `${fixed(p50, 2)} ms p50, ${fixed(percentile(wall, 0.9), 2)} ms p90 (the call's own write included); CPU ${fixed(percentile(cpu, 0.5), 2)} ms p50`,
        ...(way !== 'walked' ? { target: `≤ ${TARGET_MS} ms p50`, met: p50 <= TARGET_MS } : {}),
        detail: `${calls} turns alternating with the other way; load average ${load}; node ${process.version}`,
      });
    }
    printFigure({ name: 'First writing call on a directory (the walk that opens its watch)', value: `${fixed(first.wallMs)} ms, CPU ${fixed(first.cpuMs)} ms` });
    printFigure({ name: 'First writing call on a directory, bytes kept (the walk and every file read and hashed)', value: `${fixed(firstKept.wallMs)} ms, CPU ${fixed(firstKept.cpuMs)} ms` });
  } finally {
    for (const watches of Object.values(ways)) watches.close();
    rmSync(cwd, { recursive: true, force: true });
  }
});
