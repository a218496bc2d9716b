/**
 * What confinement costs one command: a host `true` against a `true` in each bubblewrap view,
 * run one after another through the same process-group runner the shell tool uses.
 *
 *   node --import tsx bench/confinement.ts        (BENCH_RUNS, default 50)
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runInProcessGroup, type CommandRunner } from '../src/exec/process-group.ts';
import { createConfinedRunner } from '../src/exec/confined-runner.ts';
import { DEFAULT_BUBBLEWRAP_PATH } from '../src/sandbox/bubblewrap.ts';
import { inspectSystemEntries } from '../src/sandbox/system-paths.ts';
import { median, percentile, printFigure, runIfMain } from './support/report.ts';

async function timeRuns(runner: CommandRunner, root: string, writable: boolean, runs: number): Promise<number[]> {
  const durations: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const result = await runner({ argv: ['true'], cwd: root, env: {}, timeoutMs: 10_000, signal: new AbortController().signal, onOutput: () => {}, view: { writable, roots: [root] } });
    if (result.exitCode !== 0) throw new Error(`true failed: ${result.output}`);
    durations.push(performance.now() - started);
  }
  return durations;
}

function print(name: string, durations: number[]): void {
  printFigure({ name, value: `median ${median(durations).toFixed(1)} ms, p90 ${percentile(durations, 0.9).toFixed(1)} ms`, detail: `${durations.length} runs, one at a time` });
}

runIfMain(import.meta.url, async () => {
  const runs = Number(process.env.BENCH_RUNS ?? 50);
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-bench-')));
  const confined = createConfinedRunner({ bubblewrapPath: DEFAULT_BUBBLEWRAP_PATH, system: inspectSystemEntries(), secretPaths: [] });
  try {
    print('host true', await timeRuns((request) => runInProcessGroup(request), root, true, runs));
    print('confined true, read-only view', await timeRuns(confined, root, false, runs));
    print('confined true, writable view', await timeRuns(confined, root, true, runs));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
