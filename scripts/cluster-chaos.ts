// Cluster chaos (issue 30): N agentd instances on one PostgreSQL database, concurrent turns with
// tool calls and approvals, and in every round an instance killed (-9, then started again), frozen
// past its lease (SIGSTOP, then SIGCONT), or cut off from the database past its lease while it runs
// on (a partition: its connections go through a proxy that stops forwarding, then forwards again).
// Checked after each round:
//   - every accepted turn ends;
//   - no turn ran on two instances at once: each instance has a fake provider of its own, so every
//     model request names the process that made it, and each must come from the turn's owner at
//     that moment (the fencing log: the instance it was submitted to, then each instance that
//     logged taking it, over from a dead owner or queued elsewhere);
//   - no tool ran twice (each call appends its id to a file);
//   - history contiguous (indices dense from 0, one entry per ended turn);
//   - usage sums match (a completed turn counts its three model responses once each; a session's
//     usage is the sum of its entries).
// Build first (`npm run build`), then:
//   nice -n 19 node --import tsx scripts/cluster-chaos.ts [--instances 3] [--rounds 20] [--turns 4] [--lease 3] [--minutes 30]
// Prints one line per round and a summary; exits 1 on any violation.
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, realpathSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createBackend } from '../test/support/backends.ts';
import { startFakeProvider, type FakeProvider, type FakeStep } from '../test/support/fake-provider.ts';
import { fakeProviderModels } from '../test/support/server.ts';
import { startAgentd, type AgentdProcess } from '../test/support/agentd-process.ts';
import { http } from '../test/support/http.ts';
import { startFreezableProxy, type FreezableProxy } from '../test/support/freezable-proxy.ts';

const { values } = parseArgs({
  options: {
    instances: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '20' },
    turns: { type: 'string', default: '4' },
    lease: { type: 'string', default: '3' },
    minutes: { type: 'string', default: '30' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    report: { type: 'string' },
  },
});
const INSTANCES = Number(values.instances);
const ROUNDS = Number(values.rounds);
const TURNS = Number(values.turns);
const LEASE_SECONDS = Number(values.lease);
const stopAt = Date.now() + Number(values.minutes) * 60_000;
const TERMINAL = ['completed', 'failed', 'cancelled'];
const USAGE = { input: 100, output: 10 };
/** A round's turns must end within this; they wait out leases of killed and frozen owners. */
const ROUND_TIMEOUT_MS = 120_000;

let seed = Number(values.seed);
/** A small deterministic generator (mulberry32), so a run can be repeated with --seed. */
function random(): number {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// --- the world: one database, one workspace, a fake provider per instance slot -------------------
const backend = await createBackend('postgres');
const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chaos-ws-')));
const toolLog = join(workspace, 'tool-runs.log');
const admin = new pg.Client({ connectionString: backend.databaseUrl! });
await admin.connect();

/** Each turn's conversation, answered the same however often a request is repeated: call a, call b, answer. */
function responder(body: any): FakeStep {
  const input: any[] = Array.isArray(body?.input) ? body.input : [];
  const lastUser = input.findLastIndex((item) => item?.role === 'user');
  const marker = /chaos-[a-z0-9-]+/.exec(JSON.stringify(input[lastUser]?.content ?? ''))?.[0] ?? 'chaos-unknown';
  const outputs = input.slice(lastUser + 1).filter((item) => item?.type === 'function_call_output').length;
  const call = (suffix: string) => {
    const callId = `${marker}-${suffix}`;
    const pause = (0.5 + random() * 2.5).toFixed(2);
    return { name: 'shell', callId, arguments: JSON.stringify({ command: ['sh', '-c', `echo ${callId} >> ${toolLog}; sleep ${pause}`] }) };
  };
  if (outputs === 0) return { kind: 'reply', toolCalls: [call('a')], usage: USAGE, chunkDelayMs: 20 };
  if (outputs === 1) return { kind: 'reply', toolCalls: [call('b')], usage: USAGE, chunkDelayMs: 20 };
  return { kind: 'reply', text: `done ${marker} ${'word '.repeat(20)}`, usage: USAGE, chunkDelayMs: 50 };
}

interface Slot {
  name: string;
  fake: FakeProvider;
  modelsFile: string;
  process: AgentdProcess | null;
  generation: number;
  frozen: boolean;
  /** the instance's way to the database, for partitions (kept across generations) */
  proxy: FreezableProxy;
  partitioned: boolean;
  /** each generation's start, for attributing the fake's requests */
  generations: { id: string; startedAt: number }[];
  /** every generation's log, kept after it died */
  logs: string[];
}

const slots: Slot[] = [];
const databaseAddress = new URL(backend.databaseUrl!);
for (let index = 0; index < INSTANCES; index++) {
  const fake = await startFakeProvider();
  fake.respond('chaos-', responder);
  const modelsFile = join(backend.stateDir, `models-${index}.json`);
  writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
  const proxy = await startFreezableProxy(databaseAddress.hostname, Number(databaseAddress.port || 5432));
  slots.push({ name: `i${index}`, fake, modelsFile, process: null, generation: 0, frozen: false, proxy, partitioned: false, generations: [], logs: [] });
}
const requestTimes = new Map<FakeProvider, number[]>();
for (const slot of slots) {
  const times: number[] = [];
  requestTimes.set(slot.fake, times);
  // the fake records requests in order; their arrival times are taken here, as they are seen
  const original = slot.fake.requests.push.bind(slot.fake.requests);
  slot.fake.requests.push = (...items) => {
    for (let n = 0; n < items.length; n++) times.push(Date.now());
    return original(...items);
  };
}

async function startSlot(slot: Slot): Promise<void> {
  slot.generation++;
  const id = `${slot.name}-g${slot.generation}`;
  const args = [
    '--state-dir', backend.stateDir, '--workspace-root', workspace, '--models-file', slot.modelsFile, '--database-url', slot.proxy.urlFor(backend.databaseUrl!),
    '--cluster', '--instance-id', id, '--turn-lease-seconds', String(LEASE_SECONDS),
    // info: a queued turn taken by another instance is logged there at info (OWNERSHIP_LINES)
    '--log-level', 'info',
  ];
  slot.generations.push({ id, startedAt: Date.now() });
  slot.process = await startAgentd(args, 60_000);
  slot.frozen = false;
}

async function killSlot(slot: Slot): Promise<void> {
  if (!slot.process) return;
  const dying = slot.process;
  slot.process = null;
  if (slot.frozen) dying.child.kill('SIGCONT');
  await dying.kill();
  slot.logs.push(dying.stdout());
  slot.frozen = false;
}

const live = () => slots.filter((slot) => slot.process && !slot.frozen && !slot.partitioned);

// --- the fencing log ----------------------------------------------------------------------------
interface Ownership {
  at: number;
  owner: string;
}
/**
 * The log lines of an instance that takes a turn: over from an owner whose lease ran out, or, queued
 * on another instance, to run it here (first come, first served across instances; logged at info).
 */
const OWNERSHIP_LINES = ['took over a turn whose lease ran out: resuming it', 'took a turn queued on another instance: starting it here', 'took an older turn queued on another instance: it starts here first'];

/** turnId → who held it from when: its submitter, then each instance that logged taking it. */
const owners = new Map<string, Ownership[]>();

function takeoversFromLogs(): void {
  for (const slot of slots) {
    const texts = [...slot.logs, slot.process?.stdout() ?? ''];
    texts.forEach((text, index) => {
      const generation = slot.generations[index]?.id ?? `${slot.name}-g?`;
      for (const line of text.split('\n')) {
        if (!OWNERSHIP_LINES.some((message) => line.includes(message))) continue;
        try {
          const entry = JSON.parse(line) as { turnId: string; time: number };
          const list = owners.get(entry.turnId);
          if (list && !list.some((seen) => seen.at === entry.time && seen.owner === generation)) list.push({ at: entry.time, owner: generation });
        } catch {
          // not a log line
        }
      }
    });
  }
  for (const list of owners.values()) list.sort((a, b) => a.at - b.at);
}

/** The generation of `slot` that was alive at `at`. */
function generationAt(slot: Slot, at: number): string {
  let current = slot.generations[0]!.id;
  for (const generation of slot.generations) if (generation.startedAt <= at) current = generation.id;
  return current;
}

/** Model requests of a turn made by a process that did not own it at that moment. */
function fencingViolations(turnId: string, marker: string): string[] {
  const list = owners.get(turnId) ?? [];
  const found: string[] = [];
  for (const slot of slots) {
    const times = requestTimes.get(slot.fake)!;
    slot.fake.requests.forEach((request, index) => {
      const input: any[] = Array.isArray(request.body?.input) ? request.body.input : [];
      const lastUser = input.findLastIndex((item) => item?.role === 'user');
      if (!JSON.stringify(input[lastUser]?.content ?? '').includes(marker)) return;
      const at = times[index]!;
      const by = generationAt(slot, at);
      const owner = [...list].reverse().find((entry) => entry.at <= at)?.owner;
      if (owner !== by) found.push(`turn ${turnId}: a model request by ${by} at ${at} while ${owner ?? 'nobody'} owned it (owners ${list.map((entry) => `${entry.owner}@${entry.at}`).join(' ')})`);
    });
  }
  return found;
}

// --- approvals: whatever is asked is answered, on any live instance ------------------------------
let approving = true;
let approvals = 0;
const approver = (async () => {
  while (approving) {
    await sleep(250);
    const asked = live();
    if (asked.length === 0) continue;
    try {
      const listed = (await http('GET', `${pick(asked).process!.url}/v1/requests`)).json?.data ?? [];
      for (const request of listed) {
        const answering = live();
        if (answering.length === 0) break;
        const answer = await http('POST', `${pick(answering).process!.url}/v1/requests/${request.id}/resolve`, { body: { decision: 'allow_once' } });
        if (answer.status === 200) approvals++;
      }
    } catch {
      // the instance died under the request: the next poll asks another
    }
  }
})();

// --- rounds -------------------------------------------------------------------------------------
for (const slot of slots) await startSlot(slot);
const sessions: string[] = [];
for (let index = 0; index < TURNS; index++) {
  sessions.push((await http('POST', `${pick(live()).process!.url}/v1/sessions`, { body: {} })).json.id);
}

interface Totals {
  rounds: number;
  accepted: number;
  completed: number;
  otherEnds: Record<string, number>;
  kills: number;
  freezes: number;
  partitions: number;
  resumed: number;
  interrupted: number;
  violations: string[];
}
const totals: Totals = { rounds: 0, accepted: 0, completed: 0, otherEnds: {}, kills: 0, freezes: 0, partitions: 0, resumed: 0, interrupted: 0, violations: [] };
const allTurns: { id: string; marker: string; sessionId: string }[] = [];

/**
 * Submits a turn to a live instance, retried on another with the same clientRequestId when the
 * answer is lost (the instance killed or frozen under the request): never two turns for one
 * marker. Its first owner is the instance whose attempt came last before the turn's createdAt.
 */
async function submit(sessionId: string, marker: string): Promise<{ id: string } | null> {
  const clientRequestId = randomUUID();
  const tried: Ownership[] = [];
  for (let tries = 0; tries < 40; tries++) {
    const slot = pick(live().length ? live() : slots.filter((candidate) => candidate.process));
    if (!slot?.process) {
      await sleep(200);
      continue;
    }
    const submittedAt = Date.now();
    tried.push({ at: submittedAt, owner: generationAt(slot, submittedAt) });
    try {
      const answer = await Promise.race([
        http('POST', `${slot.process.url}/v1/sessions/${sessionId}/turns`, { body: { input: `${marker}: two tools, then an answer`, clientRequestId } }),
        sleep(10_000).then(() => null),
      ]);
      if (answer && (answer.status === 202 || answer.status === 200)) {
        const createdAt = Date.parse(answer.json.createdAt);
        const first = [...tried].reverse().find((attempt) => attempt.at <= createdAt) ?? tried[0]!;
        owners.set(answer.json.id, [first]);
        return answer.json;
      }
    } catch {
      // killed under the request: another instance is asked
    }
    await sleep(200);
  }
  return null;
}

async function statusOf(turnId: string): Promise<any> {
  for (const slot of live()) {
    try {
      const answer = await http('GET', `${slot.process!.url}/v1/turns/${turnId}`);
      if (answer.status === 200) return answer.json;
    } catch {
      // try another
    }
  }
  return null;
}

async function chaos(roundEnd: Promise<void>): Promise<void> {
  let ended = false;
  void roundEnd.then(() => (ended = true));
  for (let actions = 0; actions < 2 && !ended; actions++) {
    await sleep(200 + random() * 2_500);
    if (ended) return;
    const candidates = live();
    if (candidates.length === 0) return;
    const victim = pick(candidates);
    const action = random();
    if (action < 1 / 3) {
      totals.kills++;
      await killSlot(victim);
      await sleep(500 + random() * 2_500);
      await startSlot(victim);
    } else if (action < 2 / 3) {
      totals.freezes++;
      victim.frozen = true;
      victim.process!.child.kill('SIGSTOP');
      await sleep(LEASE_SECONDS * 1000 + 500 + random() * 2_000);
      victim.process?.child.kill('SIGCONT');
      victim.frozen = false;
    } else {
      // its watchdog must stop its turns (and their tools) once a lease passes without a renewal
      totals.partitions++;
      victim.partitioned = true;
      victim.proxy.freeze();
      await sleep(LEASE_SECONDS * 1000 + 500 + random() * 2_000);
      victim.proxy.thaw();
      victim.partitioned = false;
    }
  }
}

const startedAt = Date.now();
for (let round = 1; round <= ROUNDS && Date.now() < stopAt; round++) {
  const violations: string[] = [];
  const turns: { id: string; marker: string; sessionId: string }[] = [];
  let settle!: () => void;
  const roundEnd = new Promise<void>((resolve) => (settle = resolve));
  const chaosDone = chaos(roundEnd);
  await Promise.all(
    sessions.map(async (sessionId, index) => {
      const marker = `chaos-r${round}-s${index}`;
      const turn = await submit(sessionId, marker);
      if (turn) turns.push({ id: turn.id, marker, sessionId });
      else violations.push(`round ${round}: no instance accepted ${marker}`);
    }),
  );
  totals.accepted += turns.length;
  // every accepted turn ends
  const deadline = Date.now() + ROUND_TIMEOUT_MS;
  const endings = new Map<string, any>();
  while (endings.size < turns.length && Date.now() < deadline) {
    for (const turn of turns) {
      if (endings.has(turn.id)) continue;
      const now = await statusOf(turn.id);
      if (now && TERMINAL.includes(now.status)) endings.set(turn.id, now);
    }
    await sleep(300);
  }
  settle();
  await chaosDone;
  for (const slot of slots) {
    if (slot.frozen) slot.process?.child.kill('SIGCONT');
    slot.frozen = false;
    if (!slot.process) await startSlot(slot);
  }
  for (const turn of turns) if (!endings.has(turn.id)) violations.push(`round ${round}: turn ${turn.id} (${turn.marker}) did not end within ${ROUND_TIMEOUT_MS / 1000} s (${(await statusOf(turn.id))?.status})`);

  // the fencing log
  takeoversFromLogs();
  for (const turn of turns) violations.push(...fencingViolations(turn.id, turn.marker));

  // no tool ran twice
  const runs = existsSync(toolLog) ? readFileSync(toolLog, 'utf8').split('\n').filter(Boolean) : [];
  const counts = new Map<string, number>();
  for (const callId of runs) counts.set(callId, (counts.get(callId) ?? 0) + 1);
  for (const turn of turns) {
    for (const suffix of ['a', 'b']) {
      const ran = counts.get(`${turn.marker}-${suffix}`) ?? 0;
      if (ran > 1) violations.push(`round ${round}: tool ${turn.marker}-${suffix} ran ${ran} times`);
    }
  }

  // history contiguous, usage sums
  const ids = turns.map((turn) => turn.id);
  const perSession = await admin.query<{ session_id: string; entries: string; top: string | null }>(
    'select session_id, count(*) as entries, max(idx) as top from history_turns group by session_id',
  );
  for (const row of perSession.rows) if (Number(row.entries) !== Number(row.top) + 1) violations.push(`session ${row.session_id}: ${row.entries} entries up to index ${row.top}`);
  if (ids.length > 0) {
    const entries = await admin.query<{ turn_id: string; usage: string | null; items: string }>('select turn_id, usage, items from history_turns where turn_id = any($1)', [ids]);
    const byTurn = new Map<string, typeof entries.rows>();
    for (const row of entries.rows) byTurn.set(row.turn_id, [...(byTurn.get(row.turn_id) ?? []), row]);
    for (const turn of turns) {
      const ending = endings.get(turn.id);
      if (!ending) continue;
      const stored = byTurn.get(turn.id) ?? [];
      if (ending.status === 'completed') {
        totals.completed++;
        if (stored.length !== 1) violations.push(`turn ${turn.id}: ${stored.length} history entries`);
        const usage = stored[0]?.usage ? JSON.parse(stored[0].usage) : null;
        if (usage && (usage.input !== 3 * USAGE.input || usage.output !== 3 * USAGE.output)) violations.push(`turn ${turn.id}: usage ${usage.input}/${usage.output}, not three responses' ${3 * USAGE.input}/${3 * USAGE.output}`);
        if (stored[0]?.items.includes('interrupted: the agentd instance')) totals.interrupted++;
      } else {
        totals.otherEnds[`${ending.status} ${ending.error ?? ''}`.trim()] = (totals.otherEnds[`${ending.status} ${ending.error ?? ''}`.trim()] ?? 0) + 1;
        if (stored.length > 1) violations.push(`turn ${turn.id}: ${stored.length} history entries`);
      }
      if (ending.attempt > 1) totals.resumed++;
    }
  }
  const sums = await admin.query<{ id: string; usage_input: string; summed: string | null }>(
    `select s.id, s.usage_input, (select sum((h.usage::json->>'input')::bigint) from history_turns h where h.session_id = s.id) as summed from sessions s`,
  );
  for (const row of sums.rows) if (Number(row.usage_input) !== Number(row.summed ?? 0)) violations.push(`session ${row.id}: usage ${row.usage_input}, its entries sum to ${row.summed}`);

  totals.rounds = round;
  allTurns.push(...turns);
  totals.violations.push(...violations);
  const attempts = [...endings.values()].map((ending) => ending.attempt);
  console.log(`round ${round}: ${turns.length} turns, ${endings.size} ended (attempts ${attempts.join(',')}), ${violations.length === 0 ? 'ok' : violations.join('; ')}`);
}

approving = false;
await approver;
const minutes = ((Date.now() - startedAt) / 60_000).toFixed(1);
const summary = [
  `cluster chaos: ${INSTANCES} instances, lease ${LEASE_SECONDS} s, seed ${values.seed}, ${totals.rounds} rounds in ${minutes} min`,
  `${totals.accepted} turns accepted, ${totals.completed} completed, other ends ${JSON.stringify(totals.otherEnds)}; ${totals.resumed} resumed at least once, ${totals.interrupted} with a call reported interrupted; ${approvals} approvals`,
  `${totals.kills} kill -9, ${totals.freezes} SIGSTOP past the lease, ${totals.partitions} cut off from the database past the lease; ${totals.violations.length} violations`,
  ...totals.violations.map((violation) => `  ${violation}`),
].join('\n');
console.log(`\n${summary}`);
if (values.report) appendFileSync(values.report, `${summary}\n`);

for (const slot of slots) {
  await killSlot(slot);
  await slot.fake.close();
  await slot.proxy.close();
}
await admin.end();
await backend.drop();
process.exit(totals.violations.length > 0 ? 1 : 0);
