/**
 * Figure 9 of docs/PERFORMANCE.md: start-up to ready on SQLite, from spawning
 * `node bin/agentd.js serve --port 0` to the first 200 from GET /readyz.
 *
 *   node --import tsx bench/startup.ts        (BENCH_STARTS starts of each kind, default 5)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentdNode, agentdRoot, ensureBuilt, modelsFor, REPO_ROOT, sleep, stopChild } from './support/children.ts';
import { HttpClient } from './support/http-client.ts';
import { fixed, median, printFigure, runIfMain } from './support/report.ts';

const READY_TIMEOUT_MS = 20_000;

interface Start {
  /** spawn → first 200 from /readyz */
  readyMs: number;
  /** spawn → the "listening on" line */
  listeningMs: number;
}

/** Starts a node process whose stdout names its URL, waits for `readyPath` to answer 200, stops it. */
async function timeStart(nodeArgs: string[], pattern: RegExp, readyPath: string, node = process.execPath): Promise<Start> {
  const spawnedAt = performance.now();
  const child = spawn(node, nodeArgs, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`no "listening" line within ${READY_TIMEOUT_MS} ms:\n${output}`)), READY_TIMEOUT_MS);
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        output += chunk;
        const match = pattern.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      child.once('exit', () => reject(new Error(`exited before listening:\n${output}`)));
    });
    const listeningMs = performance.now() - spawnedAt;
    const client = new HttpClient(url, 1);
    try {
      for (const deadline = Date.now() + READY_TIMEOUT_MS; ; ) {
        const response = await client.request('GET', readyPath).catch(() => ({ status: 0 }));
        if (response.status === 200) break;
        if (Date.now() > deadline) throw new Error(`${readyPath} never answered 200`);
        await sleep(1);
      }
    } finally {
      client.close();
    }
    return { readyMs: performance.now() - spawnedAt, listeningMs };
  } finally {
    await stopChild(child);
  }
}

export async function benchStartup(starts: number): Promise<void> {
  ensureBuilt(agentdRoot());
  const stateDir = mkdtempSync(join(tmpdir(), 'agentd-bench-startup-'));
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-bench-ws-')));
  const modelsFile = join(stateDir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(modelsFor('http://127.0.0.1:9/v1')));
  const agentdArgs = (state: string) => [join(agentdRoot(), 'bin', 'agentd.js'), 'serve', '--port', '0', '--state-dir', state, '--workspace-root', workspace, '--models-file', modelsFile];
  const agentdListening = /agentd listening on (http:\/\/\S+)/;
  try {
    const fresh: Start[] = [];
    const again: Start[] = [];
    const hello: Start[] = [];
    for (let index = 0; index < starts; index++) {
      const state = join(stateDir, `run${index}`);
      fresh.push(await timeStart(agentdArgs(state), agentdListening, '/readyz', agentdNode()));
      again.push(await timeStart(agentdArgs(state), agentdListening, '/readyz', agentdNode()));
      hello.push(await timeStart([join(REPO_ROOT, 'bench', 'support', 'hello-server.mjs')], /hello listening on (http:\/\/\S+)/, '/'));
    }
    const ready = median(again.map((start) => start.readyMs));
    printFigure({
      name: 'Start-up to ready, SQLite, existing database',
      value: `${Math.round(ready)} ms`,
      target: '≤ 0.5 s',
      met: ready <= 500,
      detail: `median of ${starts}: spawn of node bin/agentd.js serve → first 200 on /readyz; "listening" after ${Math.round(median(again.map((start) => start.listeningMs)))} ms`,
    });
    const first = median(fresh.map((start) => start.readyMs));
    printFigure({
      name: 'Start-up to ready, SQLite, new database (migrations)',
      value: `${Math.round(first)} ms`,
      target: '≤ 0.5 s',
      met: first <= 500,
      detail: `median of ${starts}`,
    });
    printFigure({ name: 'Bare Fastify hello start-up to first 200 (context)', value: `${fixed(median(hello.map((start) => start.readyMs)), 0)} ms`, detail: `median of ${starts}` });
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => benchStartup(Number(process.env.BENCH_STARTS ?? 5)));
