// Issue 40 item 2: the runner holds a turn through one claim. Alone on its database the claim
// costs nothing: confirming it, journalling, showing states and releasing it make no database
// round trip (every query of the store is counted). In a cluster, a former owner whose turn was
// taken over sees one error whichever way it meets the loss (a journalled step, a state shown, its
// end written, its lease renewed): TurnClaimLost, and the claim's holder hears of it.
import { ClusterSupervisor } from '../../../src/runtime/cluster-supervisor.ts';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { KyselyPlugin } from 'kysely';
import { sessionRecord, useStore } from '../../support/store.ts';
import { nowIso, uuidv7 } from '../../../src/domain/ids.ts';
import type { TurnRecord } from '../../../src/domain/turn.ts';
import type { Db } from '../../../src/store/database.ts';
import { insertSession } from '../../../src/store/sessions.ts';
import { findTurn } from '../../../src/store/turns.ts';
import { takeOverExpiredTurns } from '../../../src/store/turn-leases.ts';
import { storeTurnEnd } from '../../../src/store/eventual-turn-write.ts';
import { ActiveTurns, type ActiveTurn } from '../../../src/runtime/turn/active-turns.ts';
import { soleClaims, type TurnClaim } from '../../../src/runtime/turn/turn-claim.ts';
import { TurnClaimLost } from '../../../src/runtime/turn/claim-lost.ts';
import { ClusterClaims } from '../../../src/runtime/turn/cluster-claims.ts';
import { TurnLeases } from '../../../src/runtime/turn/turn-leases.ts';
import { EventHub } from '../../../src/runtime/event-hub.ts';
import type { ProviderAdapter } from '../../../src/agent/providers/types.ts';
import type { TurnTools } from '../../../src/runtime/turn/tool-port.ts';

const logger = pino({ level: 'silent' });
const NO_ATTACHMENTS = { images: [], files: [] };

/** The store's handle with every query it sends counted. */
function counting(db: Db): { db: Db; readonly queries: number; reset(): void } {
  let queries = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      queries++;
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  };
  return {
    db: db.withPlugin(counter),
    get queries() {
      return queries;
    },
    reset: () => (queries = 0),
  };
}

async function newTurn(db: Db, active: ActiveTurns): Promise<ActiveTurn> {
  const session = sessionRecord();
  await insertSession(db, 'default', session);
  const record: TurnRecord = {
    id: uuidv7(), boundaryId: 'default', sessionId: session.id, clientRequestId: uuidv7(), inputDigest: 'digest', status: 'queued', createdAt: nowIso(), startedAt: null,
    finishedAt: null, error: null, input: 'claimed', userText: 'claimed', inputTruncated: false, output: null, attempt: 1,
  };
  return active.reserve(record, session, NO_ATTACHMENTS);
}

/** What the claim's holder heard. */
function holding(claim: TurnClaim): TurnClaimLost[] {
  const heard: TurnClaimLost[] = [];
  claim.heldBy({ lost: (lost) => heard.push(lost), cancelRequested: () => {} });
  return heard;
}

describe('a claim alone on its database', () => {
  const opened = useStore('sqlite');

  it('confirms, journals, shows and releases without a round trip', async () => {
    const counted = counting(opened.store.db);
    const turn = await newTurn(opened.store.db, new ActiveTurns());
    const { claim, queueFull } = await soleClaims(counted.db).admit(turn, { input: 'claimed', userText: 'claimed' });
    assert.equal(queueFull, false);
    assert.equal((await findTurn(opened.store.db, 'default', turn.record.id))?.status, 'queued', 'admission stored the queued row');
    assert.ok(counted.queries > 0, 'the count sees the store\'s queries');
    counted.reset();

    const heard = holding(claim);
    const adapter = { dialect: 'openai-responses' } as ProviderAdapter;
    const tools = { specs: () => [], planMode: () => false, execute: () => Promise.resolve({ output: '', truncated: false }) } as TurnTools;
    assert.equal(claim.confirming(adapter), adapter, 'the adapter is not wrapped');
    assert.equal(claim.confirmingTools(tools), tools, 'the tools are not wrapped');
    assert.equal(claim.journal(0), undefined, 'nothing is journalled');
    for (let i = 0; i < 100; i++) await claim.confirm();
    claim.show({ ...turn.record, status: 'running', startedAt: nowIso() });
    claim.show({ ...turn.record, status: 'waiting_for_input', startedAt: nowIso() });
    await claim.shown();
    assert.equal(await claim.write(() => Promise.resolve('written')), 'written');
    claim.release();

    assert.equal(counted.queries, 0, 'the claim made no round trip');
    assert.deepEqual(heard, []);
  });
});

describe('a former owner of a cluster\'s turn sees TurnClaimLost', () => {
  const opened = useStore('postgres');
  let db: Db;
  let hub: EventHub;
  const leaseSets: TurnLeases[] = [];
  // the instance's loop: it renews and watches the leases
  const supervisor = new ClusterSupervisor({ instanceId: 'alpha', logger });

  before(async () => {
    db = opened.store.db;
    hub = await EventHub.open(db, 'default', 100, logger);
  });
  after(() => {
    for (const leases of leaseSets) leases.stop();
    supervisor.close();
  });

  function claimsOf(turnLeaseMs: number): ClusterClaims {
    const leases = new TurnLeases(db, { instanceId: 'alpha', turnLeaseMs, maxTakeovers: 5 }, logger, hub, null, supervisor.boundary(null));
    leaseSets.push(leases);
    return new ClusterClaims({ boundary: { db, id: 'default', limits: { maxQueuedTurns: 10, maxQueuedTurnsPerTenant: 10 } }, leases, logger, prepare: () => Promise.resolve(null) });
  }

  async function takenOverFrom(claims: ClusterClaims): Promise<{ turn: ActiveTurn; claim: TurnClaim; heard: TurnClaimLost[] }> {
    const turn = await newTurn(db, new ActiveTurns());
    const { claim } = await claims.admit(turn, { input: 'claimed', userText: 'claimed' });
    const heard = holding(claim);
    // alpha's lease runs out; beta takes the turn over at attempt 2
    await db.updateTable('turns').set({ lease_expires_at: 1 }).where('id', '=', turn.record.id).execute();
    assert.deepEqual(await takeOverExpiredTurns(db, 'beta', 60_000, { maxTakeovers: 5 }), [{ id: turn.record.id, attempt: 2 }]);
    return { turn, claim, heard };
  }

  it('from a journalled step, a state shown and its end, and its holder hears it', async () => {
    const { turn, claim, heard } = await takenOverFrom(claimsOf(60_000));
    const journal = claim.journal(0)!;
    await assert.rejects(journal({ items: [], modelStep: null }), (error) => error instanceof TurnClaimLost && error.loss === 'taken_over');
    claim.show({ ...turn.record, status: 'running', startedAt: nowIso() });
    await claim.shown();
    await assert.rejects(claim.write(() => storeTurnEnd(db, { ...turn.record, status: 'cancelled', finishedAt: nowIso() }, undefined)), TurnClaimLost);
    assert.equal(heard.length, 3, 'each refused write told the holder');
    assert.ok(heard.every((lost) => lost instanceof TurnClaimLost && lost.loss === 'taken_over'));
    const row = await findTurn(db, 'default', turn.record.id);
    assert.deepEqual([row?.status, row?.attempt], ['queued', 2], 'nothing of the former owner was stored');
  });

  it('from its lease\'s renewal, and confirm refuses from then on', async () => {
    const { claim, heard } = await takenOverFrom(claimsOf(300));
    // the next renewal (a third of the lease) finds the turn at another attempt
    await until(() => heard.length > 0);
    assert.ok(heard[0] instanceof TurnClaimLost && heard[0].loss === 'lease_lost', String(heard[0]));
    await assert.rejects(claim.confirm(), (error) => error instanceof TurnClaimLost && error.loss === 'lease_lost');
  });
});

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}
