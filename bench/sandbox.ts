/**
 * The sandbox's cost (issues 14 and 41), for each runtime: `true` run on the host (spawn) against
 * `true` run through a live runner (bin/agentd-sandbox: cgroup entry, tenant network namespace,
 * then bubblewrap, or `runsc exec` into the tenant's gVisor sandbox), p50 and p99, and the runner's start to `ready`.
 *
 *   npm run build && node --import tsx bench/sandbox.ts
 *     BENCH_RUNS runs of each (default 200), BENCH_RUNTIMES (default bubblewrap,gvisor),
 *     AGENTD_SANDBOX_RUNSC_PLATFORM for gVisor's platform (runsc's default when unset)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerEnvironment, SandboxClient } from '../src/exec/sandbox-client.ts';
import { ensureBuilt, REPO_ROOT } from './support/children.ts';
import { percentile } from './support/report.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const RUNTIMES = (process.env.BENCH_RUNTIMES ?? 'bubblewrap,gvisor').split(',');
const STARTS = 5;

async function timeHostTrue(): Promise<number> {
  const started = performance.now();
  const child = spawn('true', [], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('close', resolve));
  return performance.now() - started;
}

async function timeSandboxTrue(client: SandboxClient): Promise<number> {
  const started = performance.now();
  await client.call({ type: 'run', argv: ['true'] });
  return performance.now() - started;
}

function summary(label: string, values: number[]): string {
  return `${label}: p50 ${percentile(values, 0.5).toFixed(1)} ms, p99 ${percentile(values, 0.99).toFixed(1)} ms (${values.length} runs)`;
}

async function measure(runtime: string): Promise<void> {
  const workspace = mkdtempSync(join(tmpdir(), 'agentd-bench-sandbox-'));
  const command = [process.execPath, join(REPO_ROOT, 'bin/agentd-sandbox'), '--workspace', workspace];
  const env = { ...runnerEnvironment(), AGENTD_SANDBOX_RUNTIME: runtime };
  const starts: number[] = [];
  for (let start = 0; start < STARTS; start++) {
    const client = new SandboxClient({ command, env, readyTimeoutMs: 60_000 });
    const started = performance.now();
    await client.start();
    starts.push(performance.now() - started);
    await client.close();
  }
  const client = new SandboxClient({ command, env, readyTimeoutMs: 60_000 });
  await client.start();
  const host: number[] = [];
  const sandbox: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    host.push(await timeHostTrue());
    sandbox.push(await timeSandboxTrue(client));
  }
  await client.close();
  rmSync(workspace, { recursive: true, force: true });
  console.log(`— ${runtime}`);
  console.log(summary('true on the host (spawn)', host));
  console.log(summary(`true in the sandbox, ${runtime} (request → result)`, sandbox));
  const overhead = percentile(sandbox, 0.5) - percentile(host, 0.5);
  const overheadP99 = percentile(sandbox, 0.99) - percentile(host, 0.99);
  console.log(`sandbox overhead: p50 ${overhead.toFixed(1)} ms, p99 ${overheadP99.toFixed(1)} ms  [issue 14's target ≤ 50 ms at p50: ${overhead <= 50 ? 'met' : 'missed'}]`);
  console.log(`runner start to ready: median ${percentile(starts, 0.5).toFixed(0)} ms, max ${Math.max(...starts).toFixed(0)} ms (${STARTS} starts)`);
}

async function main(): Promise<void> {
  ensureBuilt();
  for (const runtime of RUNTIMES) await measure(runtime);
}

await main();
