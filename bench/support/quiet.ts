/**
 * The benchmark machine may be shared; a figure taken while something else burns CPU says little.
 * Before each measurement we wait (boundedly) until the machine is nearly idle.
 */
import { readFileSync } from 'node:fs';
import { sleep } from './children.ts';

const SAMPLE_MS = 500;

/** Fraction of all CPU time that was busy over a short sample. */
export async function busyFraction(): Promise<number> {
  const before = cpuTimes();
  await sleep(SAMPLE_MS);
  const after = cpuTimes();
  const total = after.total - before.total;
  return total === 0 ? 0 : 1 - (after.idle - before.idle) / total;
}

/**
 * Waits until the machine is below `threshold` busy, for at most `maxWaitMs`.
 * Returns the last busy fraction seen, so a caller can note a figure taken on a busy machine.
 * BENCH_QUIET_WAIT_MS changes the default wait (0: do not wait, for a smoke run).
 */
export async function waitForQuietMachine(maxWaitMs = Number(process.env.BENCH_QUIET_WAIT_MS ?? 60_000), threshold = 0.1): Promise<number> {
  const deadline = Date.now() + maxWaitMs;
  let busy = await busyFraction();
  while (busy > threshold && Date.now() < deadline) {
    await sleep(1_000);
    busy = await busyFraction();
  }
  return busy;
}

function cpuTimes(): { idle: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …: idle and iowait are the idle ones.
  const idle = fields[3] + (fields[4] ?? 0);
  return { idle, total: fields.reduce((sum, value) => sum + value, 0) };
}
