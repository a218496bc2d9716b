// Issue 40 item 1: the fence in one module. Every per-turn write of the store goes through
// store/turn-fence.ts (a table keyed by a turn written anywhere else fails the first test, unless
// it is listed below with the reason it needs no fence), and each fenced write of a former owner,
// after a takeover, is refused by its outcome: it throws StaleTurnWrite and nothing of it is
// stored, while the same write at the turn's attempt lands. A real PostgreSQL database.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { sessionRecord, useStore } from '../support/store.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';
import type { TurnRecord } from '../../src/domain/turn.ts';
import { insertSession } from '../../src/store/sessions.ts';
import { insertTurn, updateTurn, findTurn } from '../../src/store/turns.ts';
import { StaleTurnWrite } from '../../src/store/turn-fence.ts';
import { appendTurnStep, readTurnSteps } from '../../src/store/turn-steps.ts';
import { readTurnAgents, storeTurnAgents } from '../../src/store/turn-agents.ts';
import { insertHumanRequest, listPendingRequests } from '../../src/store/human-requests.ts';
import { claimSteer, insertSteer } from '../../src/store/turn-steers.ts';
import { finalizeTurn } from '../../src/store/finalize.ts';
import { storeTurnEnd } from '../../src/store/eventual-turn-write.ts';
import { renewTurnLeases, takeOverExpiredTurns } from '../../src/store/turn-leases.ts';
import { ensureEventCounter, storeEvents } from '../../src/store/cluster-events.ts';
import { buildHistoryEntry } from '../../src/domain/history-entry.ts';
import type { Db } from '../../src/store/database.ts';
import pino from 'pino';
import { EventHub } from '../../src/runtime/event-hub.ts';
import { RequestBroker } from '../../src/runtime/turn/requests.ts';
import { TurnClaimLost } from '../../src/runtime/turn/claim-lost.ts';
import type { ClusterDuties } from '../../src/runtime/cluster-supervisor.ts';

const STORE = new URL('../../src/store/', import.meta.url).pathname;

/**
 * Writes of a per-turn table that do not go through the fence, each with why it needs none. A new
 * per-turn table, or a new write of one, fails the test until it is fenced or listed here.
 */
const UNFENCED: Record<string, string> = {
  'turns.ts turns': 'the turn\'s own row: inserted at admission (nobody holds it yet) and updated under requireWritten',
  'turn-leases.ts turns': 'the lease statements, which move the fence itself (takeover, renewal, expiry)',
  'ownerless-ends.ts turns': 'ends of turns no owner holds (expiry, start-up recovery): the statement is the fence',
  'history.ts history_turns': 'appended in the end\'s transaction after its fenced updateTurn (finalize.ts)',
  'fork.ts history_turns': 'a fork copies ended turns\' entries into a new session',
  'cluster-events.ts events': 'a batch of many turns\' events, fenced in its statement (a stale event is left out and logged, not thrown)',
  'turn-steers.ts turn_steers': 'a steer is asked through any instance; its claim is fenced (turnAtAttempt), its decision names the claim\'s attempt',
  'human-requests.ts human_requests': 'an answer is given through any instance (first wins); the request itself is stored fenced',
  'turn-reverts.ts turn_reverts': 'kept after the turn\'s end was stored (fenced) by its owner',
  'turn-reverts.ts turn_revert_contents': 'kept after the turn\'s end was stored (fenced) by its owner',
};

/** The tables with a turn_id column, from schema.ts. */
function perTurnTables(): string[] {
  const schema = readFileSync(join(STORE, 'schema.ts'), 'utf8');
  const interfaces = new Map([...schema.matchAll(/(?:export )?interface (\w+) \{([\s\S]*?)\n\}/g)].map((match) => [match[1]!, match[2]!]));
  const database = interfaces.get('Database')!;
  return [...database.matchAll(/(\w+): (\w+);/g)].filter(([, , type]) => /\bturn_id\b/.test(interfaces.get(type!) ?? '')).map(([, table]) => table!).concat('turns');
}

describe('the fence in one module', () => {
  it('no table keyed by a turn is written outside store/turn-fence.ts unless listed with its reason', () => {
    const tables = perTurnTables();
    assert.ok(tables.includes('turn_steps') && tables.includes('turn_agents') && tables.includes('human_requests'), tables.join());
    const found: string[] = [];
    for (const file of readdirSync(STORE).filter((name) => name.endsWith('.ts') && name !== 'turn-fence.ts' && name !== 'migrations.ts' && name !== 'cluster-admission.ts')) {
      const text = readFileSync(join(STORE, file), 'utf8');
      for (const table of tables) {
        const writes = new RegExp(`(insertInto|updateTable)\\('${table}'\\)|\\b(insert into|update) ${table}\\b`);
        if (writes.test(text)) found.push(`${file} ${table}`);
      }
    }
    const unlisted = found.filter((site) => !(site in UNFENCED));
    assert.deepEqual(unlisted, [], 'per-turn writes outside the fence: route them through store/turn-fence.ts or list them with a reason');
    assert.deepEqual(Object.keys(UNFENCED).filter((site) => !found.includes(site)), [], 'listed writes that no longer exist');
  });
});

describe('a former owner\'s writes are refused after a takeover, by their outcome', () => {
  const opened = useStore('postgres');
  let db: Db;
  let turn: TurnRecord;

  before(async () => {
    db = opened.store.db;
    const session = sessionRecord();
    await insertSession(db, 'default', session);
    const now = nowIso();
    turn = {
      id: uuidv7(), boundaryId: 'default', sessionId: session.id, clientRequestId: uuidv7(), inputDigest: 'digest', status: 'running', createdAt: now, startedAt: now,
      finishedAt: null, error: null, input: 'fenced', userText: 'fenced', inputTruncated: false, output: null, attempt: 1,
    };
    await insertTurn(db, turn, { input: 'fenced', userText: 'fenced' });
    // alpha held it; its lease ran out; beta takes it over at attempt 2
    await db.updateTable('turns').set({ lease_owner: 'alpha', lease_expires_at: 1 }).where('id', '=', turn.id).execute();
    const taken = await takeOverExpiredTurns(db, 'beta', 60_000, { maxTakeovers: 5 });
    assert.deepEqual(taken, [{ id: turn.id, attempt: 2 }]);
  });

  const stale = () => ({ ...turn, attempt: 1 });
  const current = () => ({ ...turn, attempt: 2 });

  it('updateTurn', async () => {
    await assert.rejects(updateTurn(db, { ...stale(), status: 'completed', finishedAt: nowIso() }), StaleTurnWrite);
    assert.equal((await findTurn(db, 'default', turn.id))!.status, 'running');
    await updateTurn(db, { ...current(), status: 'waiting_for_input' });
    assert.equal((await findTurn(db, 'default', turn.id))!.status, 'waiting_for_input');
    await updateTurn(db, { ...current(), status: 'running' });
  });

  it('appendTurnStep', async () => {
    const step = { seq: 0, items: [], modelStep: null };
    await assert.rejects(appendTurnStep(db, turn.id, 1, step), StaleTurnWrite);
    assert.deepEqual(await readTurnSteps(db, turn.id), []);
    await appendTurnStep(db, turn.id, 2, step);
    assert.equal((await readTurnSteps(db, turn.id)).length, 1);
  });

  it('storeTurnAgents', async () => {
    await assert.rejects(storeTurnAgents(db, turn.id, 1, '{"stale":true}'), StaleTurnWrite);
    assert.equal(await readTurnAgents(db, turn.id), null);
    await storeTurnAgents(db, turn.id, 2, '{"agents":[]}');
    await storeTurnAgents(db, turn.id, 2, '{"agents":[1]}');
    assert.equal(await readTurnAgents(db, turn.id), '{"agents":[1]}');
  });

  it('insertHumanRequest', async () => {
    const request = (id: string) => ({ id, turnId: turn.id, sessionId: turn.sessionId, agentId: null, kind: 'plan_question' as const, prompt: 'which?', options: ['a', 'b'], createdAt: nowIso() });
    await assert.rejects(insertHumanRequest(db, 'default', request(uuidv7()), 1), StaleTurnWrite);
    assert.deepEqual(await listPendingRequests(db, 'default', turn.id), []);
    await insertHumanRequest(db, 'default', request(uuidv7()), 2);
    assert.equal((await listPendingRequests(db, 'default', turn.id)).length, 1);
  });

  it('insertHumanRequest through the request broker: a former owner\'s question ends in TurnClaimLost, and nothing is published', async () => {
    const hub = await EventHub.open(db, 'default', 1000, pino({ level: 'silent' }));
    const noDuties: ClusterDuties = { instanceId: 'alpha', add: () => ({ wake() {}, dueIn() {}, stop() {} }), on() {}, ring() {}, close: async () => {} };
    const newestBefore = hub.log.newestId;
    const broker = new RequestBroker(hub, undefined, { db, boundaryId: 'default', attemptOf: () => 1, logger: pino({ level: 'silent' }), duties: noDuties });
    let waiting = false;
    const question = { sessionId: turn.sessionId, turnId: turn.id, agentId: null, kind: 'plan_question' as const, prompt: 'from the former owner', options: ['a', 'b'] };
    const failure = await broker.ask(question, () => (waiting = true)).catch((error: unknown) => error);
    assert.ok(failure instanceof TurnClaimLost, String(failure));
    assert.equal(failure.loss, 'taken_over');
    assert.equal(waiting, false, 'the turn never waits on a request it could not store');
    assert.equal(hub.log.newestId, newestBefore, 'no request.created');
    assert.equal((await listPendingRequests(db, 'default', turn.id)).some((request) => request.prompt === 'from the former owner'), false);
  });

  it('claimSteer', async () => {
    const id = uuidv7();
    await insertSteer(db, { id, sessionId: turn.sessionId, turnId: turn.id, clientRequestId: null, inputDigest: 'd', input: 'also this', item: { type: 'message', role: 'user', content: [{ type: 'text', text: 'also this' }] } as never, createdAt: nowIso() });
    assert.equal(await claimSteer(db, id, turn.id, 1), false);
    assert.equal(await claimSteer(db, id, turn.id, 2), true);
  });

  it('renewTurnLeases', async () => {
    const renewal = await renewTurnLeases(db, 'beta', new Map([[turn.id, 1]]), 60_000);
    assert.deepEqual([[...renewal.kept], [...renewal.ended]], [[], []], 'a renewal at the old attempt keeps nothing');
  });

  it('stored events of the old attempt are left out', async () => {
    await ensureEventCounter(db, 'default');
    const draft = (attempt: number) => ({ type: 'turn.delta', sessionId: turn.sessionId, turnId: turn.id, at: nowIso(), data: '{}', attempt });
    const { stored } = await storeEvents(db, 'default', [draft(1), draft(2)], 100);
    assert.deepEqual(stored.map((event) => event.attempt), [2]);
  });

  it('the end: finalizeTurn and storeTurnEnd', async () => {
    const at = nowIso();
    const history = buildHistoryEntry({ turnId: turn.id, at, userText: 'fenced', usage: null }, { kind: 'failed', error: 'cancelled', partialItems: [], discardedText: [], providerTelemetry: [] });
    await assert.rejects(finalizeTurn(db, { ...stale(), status: 'cancelled', finishedAt: at }, history, { sessionId: turn.sessionId, updatedAt: at, derivedTitle: null }, { retryDelaysMs: [] }), StaleTurnWrite);
    await assert.rejects(storeTurnEnd(db, { ...stale(), status: 'cancelled', finishedAt: at }, undefined), StaleTurnWrite);
    const { rows } = await sql<{ entries: number }>`select count(*)::int as entries from history_turns where session_id = ${turn.sessionId}`.execute(db);
    assert.equal(rows[0]!.entries, 0, 'no history entry of the old attempt');
    assert.equal((await findTurn(db, 'default', turn.id))!.status, 'running');
    await finalizeTurn(db, { ...current(), status: 'cancelled', finishedAt: at }, history, { sessionId: turn.sessionId, updatedAt: at, derivedTitle: null }, { retryDelaysMs: [] });
    assert.deepEqual([(await findTurn(db, 'default', turn.id))!.status, (await findTurn(db, 'default', turn.id))!.attempt], ['cancelled', 2]);
  });
});
