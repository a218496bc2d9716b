/**
 * Crash consistency (issue 17 §2): agentd runs as a real process (bin/agentd.js, so dist/ must be
 * built) against the fake provider; concurrent sessions submit turns that stream, call tools and
 * wait for approvals; the process is SIGKILLed at a random moment, then the invariants are checked
 * and it is restarted. Used by the bounded test and scripts/soak.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startFakeProvider, type FakeProvider, type FakeStep } from '../../support/fake-provider.ts';
import { createBackend, type BackendKind, type TestBackend } from '../../support/backends.ts';
import { fakeProviderModels } from '../../support/server.ts';
import { http } from '../../support/http.ts';
import { invariantViolations, type AcceptedTurn, type Requester } from './invariants.ts';

const BIN = new URL('../../../bin/agentd.js', import.meta.url).pathname;
/** An approved command's argv, unique per run: how a surviving tool process is recognised after a crash. */
function toolMarker(): string {
  return `sleep 7.${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}1`;
}

export interface CrashReport {
  rounds: number;
  accepted: number;
  /** turns the kill caught active (failed `interrupted` after the restart) */
  interrupted: number;
  /** approved tool processes alive at the moment of a kill */
  toolProcessesKilled: number;
  /** tool processes that outlived a kill and were ended by the next start */
  survivorsEndedAtStart: number;
  violations: string[];
}

export interface CrashOptions {
  backend: BackendKind;
  rounds: number;
  /** sessions driven at once in each round */
  sessions?: number;
  /** the kill comes this long after start, uniformly */
  killAfterMs?: [number, number];
  onRound?: (round: number, violations: string[]) => void;
  /** stop starting rounds after this time (ms since the epoch) */
  stopAt?: number;
}

export async function runCrashRounds(options: CrashOptions): Promise<CrashReport> {
  const fake = await startFakeProvider();
  const backend = await createBackend(options.backend);
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-soak-ws-')));
  const modelsFile = join(backend.stateDir, 'models.json');
  mkdirSync(backend.stateDir, { recursive: true });
  writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
  const report: CrashReport = { rounds: 0, accepted: 0, interrupted: 0, toolProcessesKilled: 0, survivorsEndedAtStart: 0, violations: [] };
  const accepted: AcceptedTurn[] = [];
  let highestEventId = 0;
  let lastRoundStart = 0;
  let survivors: string[] = [];
  const marker = toolMarker();
  try {
    for (let round = 1; round <= options.rounds && Date.now() < (options.stopAt ?? Infinity); round++) {
      const found: string[] = [];
      scriptProvider(fake, marker);
      const agentd = await startAgentd(backend, workspace, modelsFile);
      found.push(...(await survivorsEndedByStart(survivors, report)));
      const request = requester(agentd.url);
      // Restarted: nothing may be active, every accepted request still maps to its turn.
      const roundAccepted = accepted.slice(-60);
      found.push(...(await invariantViolations(request, roundAccepted)));
      const lastRound = new Set(accepted.slice(lastRoundStart).map((turn) => turn.turnId));
      report.interrupted += ((await request('GET', '/v1/turns')).json?.data ?? []).filter((turn: any) => lastRound.has(turn.id) && turn.error === 'interrupted').length;
      lastRoundStart = accepted.length;
      const events = await eventIdsSince(agentd.url, highestEventId);
      const sessions = await Promise.all(Array.from({ length: options.sessions ?? 4 }, () => request('POST', '/v1/sessions', {}).then((answer) => answer.json.id as string)));
      const [low, high] = options.killAfterMs ?? [300, 2_500];
      const killAt = Date.now() + low + Math.random() * (high - low);
      const drivers = sessions.map((sessionId) => driveSession(request, sessionId, killAt, accepted));
      const approver = approveUntil(request, killAt);
      await Promise.all([...drivers, approver]);
      report.toolProcessesKilled += processesWith(marker).length;
      agentd.child.kill('SIGKILL');
      await once(agentd.child, 'exit');
      events.stop();
      // Event ids count on across restarts: this round's are new and above the last round's.
      if (events.ids.length && events.ids[0] <= highestEventId) found.push(`event id ${events.ids[0]} reused after a restart (highest before: ${highestEventId})`);
      if (new Set(events.ids).size !== events.ids.length) found.push('an event id was delivered twice');
      highestEventId = Math.max(highestEventId, ...events.ids);
      // bubblewrap's --die-with-parent ends a sandbox with the server, except in a rare race at
      // bwrap's start; such a survivor must be ended by the next start (sandbox/orphan-sweep.ts).
      survivors = await orphanToolProcesses(marker);
      if (backend.kind === 'sqlite') found.push(...sqliteIntegrity(backend.stateDir));
      report.rounds = round;
      report.violations.push(...found.map((violation) => `round ${round}: ${violation}`));
      options.onRound?.(round, found);
    }
    // The last kill is checked too.
    const agentd = await startAgentd(backend, workspace, modelsFile);
    report.violations.push(...(await survivorsEndedByStart(survivors, report)).map((violation) => `final: ${violation}`));
    report.violations.push(...(await invariantViolations(requester(agentd.url), accepted.slice(-60))).map((violation) => `final: ${violation}`));
    await stopGracefully(agentd.child);
    report.accepted = accepted.length;
    return report;
  } finally {
    await fake.close();
    await backend.drop();
  }
}

/** Replies that stream slowly, call tools that need approval and run for a while. */
function scriptProvider(fake: FakeProvider, marker: string): void {
  const steps: FakeStep[] = [
    { kind: 'reply', text: 'a slowly streamed answer with several words in it', chunkDelayMs: 40 },
    { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: `${marker} && touch soak-${randomUUID()}` }) }] },
    { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['ls'] }) }] },
    { kind: 'reply', text: 'quick' },
  ];
  const pending = fake.pendingSteps();
  for (let index = pending; index < 200; index++) fake.enqueue(steps[Math.floor(Math.random() * steps.length)]);
}

async function driveSession(request: Requester, sessionId: string, killAt: number, accepted: AcceptedTurn[]): Promise<void> {
  while (Date.now() < killAt) {
    const clientRequestId = randomUUID();
    const input = `turn ${clientRequestId.slice(0, 8)}`;
    const answer = await request('POST', `/v1/sessions/${sessionId}/turns`, { input, clientRequestId }).catch(() => null);
    if (answer?.status !== 202) return;
    accepted.push({ sessionId, clientRequestId, input, turnId: answer.json.id });
    while (Date.now() < killAt) {
      const turn = await request('GET', `/v1/turns/${answer.json.id}`).catch(() => null);
      if (!turn || ['completed', 'failed', 'cancelled'].includes(turn.json.status)) break;
      if (Math.random() < 0.02) await request('POST', `/v1/turns/${answer.json.id}/cancel`).catch(() => null);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, killAt - Date.now())));
}

async function approveUntil(request: Requester, killAt: number): Promise<void> {
  while (Date.now() < killAt) {
    const pending = (await request('GET', '/v1/requests').catch(() => null))?.json?.data ?? [];
    for (const humanRequest of pending) {
      // Most are approved after a moment; some stay pending when the kill comes.
      if (Math.random() < 0.7) await request('POST', `/v1/requests/${humanRequest.id}/resolve`, { decision: Math.random() < 0.8 ? humanRequest.options[0] : 'deny' }).catch(() => null);
    }
    await new Promise((resolve) => setTimeout(resolve, 60));
  }
}

export function requester(url: string): Requester {
  return async (method, path, body) => {
    const answer = await http(method, url + path, body === undefined ? {} : { body });
    return { status: answer.status, json: answer.json };
  };
}

export interface AgentdChild {
  child: ChildProcess;
  url: string;
}

export async function startAgentd(backend: TestBackend, workspace: string, modelsFile: string, extraArgs: string[] = []): Promise<AgentdChild> {
  const limits = extraArgs.includes('--max-concurrent-turns') ? [] : ['--max-concurrent-turns', '16'];
  const args = ['serve', '--port', '0', '--state-dir', backend.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, '--log-level', 'error', ...limits, ...(backend.databaseUrl ? ['--database-url', backend.databaseUrl] : []), ...extraArgs];
  const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 30_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`agentd did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { child, url: output.match(/listening on (http:\/\/\S+)/)![1] };
}

export async function stopGracefully(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = await exited;
  return code as number | null;
}

/** Event ids delivered from `after` on, read by a plain streaming fetch until stopped. */
async function eventIdsSince(url: string, after: number): Promise<{ ids: number[]; stop(): void }> {
  const controller = new AbortController();
  const ids: number[] = [];
  const response = await fetch(`${url}/v1/events`, { headers: { 'last-event-id': String(after) }, signal: controller.signal });
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = frame.match(/^id: (\d+)$/m);
          if (id) ids.push(Number(id[1]));
        }
      }
    } catch {
      // the process was killed or the stream stopped
    }
  })();
  return { ids, stop: () => controller.abort() };
}

/** Tool processes of approved commands still alive after `graceMs` (their pids). */
export async function orphanToolProcesses(marker: string, graceMs = 3_000): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const survivors = processesWith(marker);
    if (survivors.length === 0 || Date.now() > deadline) return survivors;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Violations when processes that outlived a kill are still alive shortly after the next start. */
async function survivorsEndedByStart(survivors: string[], report: CrashReport): Promise<string[]> {
  if (survivors.length === 0) return [];
  const deadline = Date.now() + 3_000;
  let alive = survivors;
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    alive = alive.filter((pid) => existsSync(`/proc/${pid}`));
  }
  if (alive.length > 0) return [`tool processes survived the server and its restart: ${alive.join(', ')}`];
  report.survivorsEndedAtStart += survivors.length;
  return [];
}

export function processesWith(marker: string): string[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(marker);
    } catch {
      return false;
    }
  });
}

function sqliteIntegrity(stateDir: string): string[] {
  const file = join(stateDir, 'agentd.sqlite');
  if (!existsSync(file)) return ['no SQLite file'];
  // Opened as the next start would open it: a WAL left by the kill is recovered first.
  const database = new Database(file, { fileMustExist: true });
  try {
    const result = database.pragma('integrity_check', { simple: true });
    return result === 'ok' ? [] : [`SQLite integrity_check: ${String(result)}`];
  } finally {
    database.close();
  }
}
