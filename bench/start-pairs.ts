/**
 * Start-ups of several builds or runtimes, alternating round by round so a busy machine's drift
 * hits each alike: spawn → "listening", spawn → first 200 from /readyz (hello: from /), the CPU time
 * used up to "listening", and RSS a moment after "listening" (BENCH_IDLE_SETTLE_MS, default 1000 as
 * figure 8's idle RSS). Prints the
 * median and quartiles of each, and the load average over the rounds.
 *
 *   node --import tsx bench/start-pairs.ts VARIANTS.json [ROUNDS, default 8]
 *
 * VARIANTS.json: [{ "name", "node", "root" (a built checkout) | "hello": true, "nodeArgs"?, "env"? }],
 * e.g. main on Node 24 against /tmp/agentd-node20 on /usr/bin/node, with both hellos. Each agentd
 * start after the first (unmeasured) one opens an existing database.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelsFor, REPO_ROOT, sleep } from './support/children.ts';
import { median, percentile } from './support/report.ts';

interface Variant {
  name: string;
  node: string;
  root?: string;
  hello?: boolean;
  nodeArgs?: string[];
  env?: Record<string, string>;
}

interface Start {
  listening: number;
  ready: number;
  rss: number;
  /** CPU time (user + system, all threads) the process had used when it printed "listening": load-independent, unlike the wall times */
  cpu: number;
}

const variants = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Variant[];
const rounds = Number(process.argv[3] ?? 8);
const settleMs = Number(process.env.BENCH_IDLE_SETTLE_MS ?? 1000);
const base = mkdtempSync(join(tmpdir(), 'agentd-start-pairs-'));
const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-start-pairs-ws-')));
const modelsFile = join(base, 'models.json');
writeFileSync(modelsFile, JSON.stringify(modelsFor('http://127.0.0.1:9/v1')));

/** /proc/PID/stat's utime + stime, in ms (10 ms resolution) */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function start(variant: Variant): Promise<Start> {
  const args = variant.hello
    ? [...(variant.nodeArgs ?? []), join(REPO_ROOT, 'bench', 'support', 'hello-server.mjs')]
    : [...(variant.nodeArgs ?? []), join(variant.root!, 'bin', 'agentd.js'), 'serve', '--port', '0', '--state-dir', join(base, variant.name.replace(/\W+/g, '-')), '--workspace-root', workspace, '--models-file', modelsFile];
  const spawnedAt = performance.now();
  const child = spawn(variant.node, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...variant.env } });
  try {
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        output += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]);
      });
      child.once('exit', () => reject(new Error(`${variant.name} exited before listening:\n${output}`)));
    });
    const listening = performance.now() - spawnedAt;
    const cpu = cpuMs(child.pid!);
    let ready = 0;
    while (ready === 0) {
      const status = await fetch(url + (variant.hello ? '/' : '/readyz')).then(async (response) => (await response.arrayBuffer(), response.status), () => 0);
      if (status === 200) ready = performance.now() - spawnedAt;
      else await sleep(1);
    }
    await sleep(Math.max(0, listening + settleMs - (performance.now() - spawnedAt)));
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
    return { listening, ready, rss, cpu };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  }
}

const results = new Map<string, Start[]>(variants.map((variant) => [variant.name, []]));
const loads: number[] = [];
for (const variant of variants) await start(variant); // creates the databases, warms the page cache
for (let round = 0; round < rounds; round++) {
  loads.push(loadavg()[0]);
  for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) results.get(variant.name)!.push(await start(variant));
}
console.log(`# ${rounds} alternating rounds, ${new Date().toISOString()}; 1-min load average at each round: min ${Math.min(...loads).toFixed(1)}, median ${median(loads).toFixed(1)}, max ${Math.max(...loads).toFixed(1)}`);
for (const variant of variants) {
  const starts = results.get(variant.name)!;
  const figure = (key: keyof Start, digits: number, unit: string) => {
    const values = starts.map((one) => one[key]);
    return `${median(values).toFixed(digits)} ${unit} [${percentile(values, 0.25).toFixed(digits)}–${percentile(values, 0.75).toFixed(digits)}]`;
  };
  console.log(`${variant.name}: listening ${figure('listening', 0, 'ms')}, ready ${figure('ready', 0, 'ms')}, CPU to listening ${figure('cpu', 0, 'ms')}, RSS ${figure('rss', 1, 'MB')} ${settleMs} ms after listening`);
}
