/** The pieces the sandbox e2e tests share: a runner program as an operator would give it, and waits. */
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDirectory } from '../sandbox/support.ts';

export const SHIPPED_RUNNER = new URL('../../bin/agentd-sandbox', import.meta.url).pathname;

/** A 0755 runner script outside every workspace (the shipped runner by default). */
export function runnerScript(body = `exec ${SHIPPED_RUNNER} "$@"`): string {
  const path = join(scratchDirectory('agentd-e2e-runner-'), 'runner');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Live host processes whose command line contains `text` (zombies aside). */
export function processesWith(text: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid).flatMap((entry) => {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      return cmdline.includes(text) && state !== 'Z' ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

export async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
