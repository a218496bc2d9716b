/**
 * An attacker for race tests: a real child process that keeps replacing `target` (atomically, by
 * rename) with a symlink to `outside` and back with the real thing, as fast as it can.
 *
 * - 'file': the real thing is a regular file holding `insideText`;
 * - 'directory': the real thing is the directory `<target>.real` (moved in and out of place).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const SWAPPER = `
const fs = require('node:fs');
const [kind, target, outside, insideText] = process.argv.slice(1);
const spare = target + '.swap';
const real = target + '.real';
// A random pause after each change, so the tool meets every phase of the swap.
const spin = (ms) => { const until = performance.now() + Math.random() * ms; while (performance.now() < until); };
for (;;) {
  try {
    if (kind === 'file') {
      fs.rmSync(spare, { force: true });
      fs.symlinkSync(outside, spare);
      fs.renameSync(spare, target);
      spin(0.5);
      fs.writeFileSync(spare, insideText);
      fs.renameSync(spare, target);
      spin(2);
    } else {
      fs.rmSync(target, { force: true });
      fs.renameSync(real, target);
      spin(6);
      fs.renameSync(target, real);
      fs.symlinkSync(outside, target);
      spin(0.5);
    }
  } catch {}
}`;

export interface Swapper {
  stop(): Promise<void>;
}

export async function startSwapper(kind: 'file' | 'directory', target: string, outside: string, insideText = ''): Promise<Swapper> {
  const child = spawn(process.execPath, ['-e', SWAPPER, kind, target, outside, insideText], { stdio: 'ignore' });
  await once(child, 'spawn');
  // Let it get going before the tool runs.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return {
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Runs `attempt` at least `minimum` times, and on until one of them got through (returned true),
 * within `budgetMs`: on a loaded machine the swapper may starve the tool for a while. Returns how
 * many got through; the caller asserts it is not zero, or the race proved nothing.
 */
export async function race(minimum: number, attempt: (index: number) => Promise<boolean>, budgetMs = 20_000): Promise<number> {
  const deadline = Date.now() + budgetMs;
  let through = 0;
  for (let index = 0; index < minimum || (through === 0 && Date.now() < deadline); index++) {
    if (await attempt(index)) through++;
  }
  return through;
}
