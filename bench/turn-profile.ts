/**
 * Where agentd's main thread spends a turn, kernel included: `perf record` on that thread while
 * the turn benchmark's 4-in-flight load runs, each sample charged to the innermost JavaScript
 * function on its stack (a syscall's kernel time, SQLite's C and V8's builtins go to the function
 * that called them). A V8 CPU profile cannot see the kernel side of a socket write, which on this
 * VM is most of it (the loopback delivery and the peer's wake-up run inside the writer's syscall).
 *
 *   node --import tsx bench/turn-profile.ts        (BENCH_TURNS turns, default 6000; needs `perf`:
 *                                                   apt-get install linux-perf)
 *
 * Prints the share of samples by kind (socket writes, SQLite, garbage collection, …) and the
 * innermost functions, named by the source module the bundle took them from.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelsFor, startAgentd, startFakeModel } from './support/children.ts';
import { fixed, runIfMain } from './support/report.ts';
import { driveTurns, TURN_LIMIT_ARGS } from './turns.ts';

/** The first rule whose pattern is on a sample's stack names its kind. */
const KINDS: [string, RegExp][] = [
  ['garbage collection', /Scavenger|MarkCompactCollector|Heap::CollectGarbage|Sweeper::|IncrementalMarking/],
  ['socket writes (writev, kernel included)', /do_writev|JS:\S*(writevGeneric|clearBuffer) /],
  ['SQLite (statements, commits, checkpoints)', /sqlite3|Statement::JS_/],
  ['socket reads (kernel) and llhttp', /ksys_read|llhttp__internal/],
  ['waiting for events', /do_epoll_wait/],
];

interface Sample {
  frames: string[];
}

function parseSamples(text: string): Sample[] {
  return text
    .split(/\n\s*\n/)
    .map((block) => ({ frames: block.split('\n').slice(1).map((line) => line.trim().replace(/^[0-9a-f]+\s+/, '')).filter(Boolean) }))
    .filter((sample) => sample.frames.length > 0);
}

/** `JS:*name file:///…/dist/bundle/chunk-X.js:LINE:COL` → `name (dist/store/history.js)`, via esbuild's module comments. */
function namerOfFrames(): (frame: string) => string {
  const modules = new Map<string, [number, string][]>();
  const moduleAt = (path: string, line: number): string => {
    let markers = modules.get(path);
    if (markers === undefined) {
      markers = [];
      readFileSync(path, 'utf8').split('\n').forEach((text, index) => {
        const marker = /^\/\/ ((?:dist|node_modules)\/\S+)$/.exec(text);
        if (marker) markers!.push([index + 1, marker[1].replace(/^node_modules\/((?:@[^/]+\/)?[^/]+).*/, '$1')]);
      });
      modules.set(path, markers);
    }
    let found = path;
    for (const [start, name] of markers) if (start <= line) found = name; else break;
    return found;
  };
  return (frame) => {
    const parsed = /^JS:[*^~]?(\S*) (?:file:\/\/)?(\S+?):(\d+):\d+/.exec(frame);
    if (!parsed) return frame.replace(/^JS:[*^~]?/, '').replace(/\s*\(.*\)$/, '');
    const [, name, path, line] = parsed;
    const where = path.includes('/dist/bundle/') ? moduleAt(path, Number(line)) : path;
    return `${name || '(anonymous)'} (${where})`;
  };
}

function report(samples: Sample[], top: number): void {
  const nameOf = namerOfFrames();
  const kinds = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const { frames } of samples) {
    // what runs below the innermost JavaScript frame, and that frame: JavaScript run by a parser's
    // callback has llhttp further up its stack, and all of it has the event loop's epoll
    const innermostAt = frames.findIndex((frame) => frame.startsWith('JS:'));
    const leaf = (innermostAt < 0 ? frames : frames.slice(0, innermostAt + 1)).join('\n');
    const kind = KINDS.find(([, pattern]) => pattern.test(leaf))?.[0] ?? 'other JavaScript and native code';
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    const name = innermostAt >= 0 ? nameOf(frames[innermostAt]) : `(no JavaScript) ${frames[0]}`;
    functions.set(name, (functions.get(name) ?? 0) + 1);
  }
  const share = (count: number) => `${fixed((100 * count) / samples.length).padStart(5)}%`;
  console.log(`# ${samples.length} samples of agentd's main thread`);
  for (const [kind, count] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`${share(count)}  ${kind}`);
  console.log('# innermost JavaScript function of each sample');
  for (const [name, count] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${share(count)}  ${name.slice(0, 160)}`);
}

runIfMain(import.meta.url, async () => {
  execFileSync('perf', ['--version'], { stdio: 'ignore' });
  const turns = Number(process.env.BENCH_TURNS ?? 6000);
  const fake = await startFakeModel();
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), args: TURN_LIMIT_ARGS, nodeArgs: ['--perf-basic-prof'] });
  const directory = mkdtempSync(join(tmpdir(), 'agentd-turn-profile-'));
  try {
    await driveTurns(agentd, { turns: 500, seconds: 60, label: 'warmup' });
    const data = join(directory, 'perf.data');
    // -t: the main thread only (its id is the process id); V8's helper threads run beside it
    const perf = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '2000', '-g', '-t', String(agentd.pid), '-o', data], { stdio: 'ignore' });
    const exited = new Promise((resolve) => perf.once('exit', resolve));
    const run = await driveTurns(agentd, { turns, seconds: 120, label: 'profiled' });
    perf.kill('SIGINT');
    await exited;
    console.log(`# ${run.timings.length} turns, 4 in flight, in ${fixed(run.elapsedMs / 1000)} s under perf`);
    const script = execFileSync('perf', ['script', '-i', data, '-F', 'ip,sym'], { maxBuffer: 1 << 30, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    report(parseSamples(script), Number(process.env.BENCH_TOP ?? 40));
  } finally {
    rmSync(directory, { recursive: true, force: true });
    rmSync(`/tmp/perf-${agentd.pid}.map`, { force: true });
    await agentd.stop();
    await fake.stop();
  }
});
