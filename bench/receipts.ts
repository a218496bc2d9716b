/**
 * The change receipt's cost (CONTRACT.md §20, issue 32): what watching one writing tool call adds
 * to a turn whose cwd holds 10,000 files in 100 directories: the two metadata walks around the
 * call and the diff, in this process, the call itself being one small file write. Prints p50 and
 * p90 over BENCH_CALLS calls (default 50) after 5 to warm up, and the machine's load average,
 * since a walk is 20,000 system calls and waits on a busy machine's CPU.
 *
 *   node --import tsx bench/receipts.ts
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TurnReceipt } from '../src/runtime/turn/turn-receipt.ts';
import { fixed, percentile, printFigure, runIfMain } from './support/report.ts';

const TARGET_MS = 5;

runIfMain(import.meta.url, async () => {
  const calls = Number(process.env.BENCH_CALLS ?? 50);
  const cwd = mkdtempSync(join(tmpdir(), 'agentd-bench-receipts-'));
  try {
    for (let directory = 0; directory < 100; directory++) {
      mkdirSync(join(cwd, `d${directory}`));
      for (let file = 0; file < 100; file++) writeFileSync(join(cwd, `d${directory}`, `f${file}.ts`), 'export {};\n');
    }
    const added: number[] = [];
    for (let call = -5; call < calls; call++) {
      const target = join(cwd, 'd7', 'f7.ts');
      const plain = performance.now();
      writeFileSync(target, `// ${call}\n`);
      const bare = performance.now() - plain;
      const receipt = new TurnReceipt(cwd);
      const watched = performance.now();
      await receipt.around(async () => writeFileSync(target, `// again ${call}\n`));
      if (receipt.changes().changes.length !== 1) throw new Error('the receipt missed the write');
      if (call >= 0) added.push(performance.now() - watched - bare);
    }
    const p50 = percentile(added, 0.5);
    printFigure({
      name: 'Receipt cost of a turn that changes one file, 10,000 files in the cwd',
      value: `${fixed(p50)} ms p50, ${fixed(percentile(added, 0.9))} ms p90 added`,
      target: `≤ ${TARGET_MS} ms p50`,
      met: p50 <= TARGET_MS,
      detail: `${calls} calls; load average ${loadavg().map((value) => fixed(value)).join(' ')}; node ${process.version}`,
    });
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
