/**
 * The sandbox runner's start of several builds, alternating round by round so a busy machine's
 * drift hits each alike: spawn of bin/agentd-sandbox → its ready line, and the CPU time of the
 * runner and the helper programs it waited for (nsenter, nft, bwrap, mount…) up to then. Each
 * build gets a workspace of its own (a root runner hands its workspace to the guest's user).
 *
 *   node --import tsx bench/runner-start-pairs.ts ROUNDS ROOT[=NODE] ROOT[=NODE] …
 *   e.g. node --import tsx bench/runner-start-pairs.ts 10 . /tmp/agentd-node20=/usr/bin/node
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median, percentile } from './support/report.ts';

const [roundsArgument, ...builds] = process.argv.slice(2);
const rounds = Number(roundsArgument);
const workspaces = new Map(builds.map((build) => [build, mkdtempSync(join(tmpdir(), 'agentd-runner-start-'))]));
const starts = new Map(builds.map((build) => [build, [] as { ms: number; cpu: number }[]]));

async function start(build: string): Promise<{ ms: number; cpu: number }> {
  const [root, node = process.execPath] = build.split('=');
  const startedAt = performance.now();
  const child = spawn(node, [join(resolve(root), 'bin', 'agentd-sandbox'), '--workspace', workspaces.get(build)!], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  await new Promise<void>((done, fail) => {
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('\n')) done();
    });
    child.once('exit', () => fail(new Error(`${build}: ${output}`)));
  });
  const ms = performance.now() - startedAt;
  if (!output.includes('"ready"')) throw new Error(`${build}: ${output}`);
  // utime, stime, cutime, cstime: the runner's own CPU and that of the helpers it reaped
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const cpu = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
  child.stdin!.end();
  await new Promise((done) => child.once('exit', done));
  return { ms, cpu };
}

const loads: number[] = [];
try {
  for (const build of builds) await start(build);
  for (let round = 0; round < rounds; round++) {
    loads.push(loadavg()[0]);
    for (const build of round % 2 === 0 ? builds : [...builds].reverse()) starts.get(build)!.push(await start(build));
  }
} finally {
  for (const workspace of workspaces.values()) rmSync(workspace, { recursive: true, force: true });
}
console.log(`# ${rounds} alternating rounds; 1-min load average: min ${Math.min(...loads).toFixed(1)}, median ${median(loads).toFixed(1)}, max ${Math.max(...loads).toFixed(1)}`);
for (const [build, values] of starts) {
  const ms = values.map((value) => value.ms);
  console.log(`${build}: start to ready ${median(ms).toFixed(0)} ms [${percentile(ms, 0.25).toFixed(0)}–${percentile(ms, 0.75).toFixed(0)}], CPU ${median(values.map((value) => value.cpu)).toFixed(0)} ms`);
}
