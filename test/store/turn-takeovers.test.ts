// docs/CLUSTER.md, "A turn that crashes its instances": the count behind --max-turn-takeovers, at
// the statements that move a lease. A lease that ran out unrenewed counts; a released one (a
// handover on SIGTERM) and a queued turn moved to an instance with room do not; at the bound, the
// sweep's end takes the turn and the takeover leaves it. A real PostgreSQL database.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { sessionRecord, useStore } from '../support/store.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';
import type { TurnRecord } from '../../src/domain/turn.ts';
import { insertSession } from '../../src/store/sessions.ts';
import { insertTurn } from '../../src/store/turns.ts';
import { endExpiredTurns, releaseTurnLeases, takeOldestQueuedTurn, takeOverExpiredTurns } from '../../src/store/turn-leases.ts';
import type { Db } from '../../src/store/database.ts';

const BOUND = { maxTakeovers: 2 };

describe('takeovers counted against --max-turn-takeovers', () => {
  const opened = useStore('postgres');
  let db: Db;
  before(() => {
    db = opened.store.db;
  });

  async function turnHeldBy(owner: string, status: TurnRecord['status']): Promise<string> {
    const session = sessionRecord();
    await insertSession(db, 'default', session);
    const now = nowIso();
    const turn: TurnRecord = {
      id: uuidv7(), boundaryId: 'default', sessionId: session.id, clientRequestId: uuidv7(), inputDigest: 'digest', status, createdAt: now, startedAt: status === 'queued' ? null : now,
      finishedAt: null, error: null, input: 'counted', userText: 'counted', inputTruncated: false, output: null, attempt: 1,
    };
    await insertTurn(db, turn, { input: 'counted', userText: 'counted' });
    await db.updateTable('turns').set({ lease_owner: owner, lease_expires_at: Date.now() + 60_000, movable: 1 }).where('id', '=', turn.id).execute();
    return turn.id;
  }
  const runOut = (id: string) => db.updateTable('turns').set({ lease_expires_at: 1 }).where('id', '=', id).execute();
  const takeoversOf = async (id: string) => (await db.selectFrom('turns').select('takeovers').where('id', '=', id).executeTakeFirstOrThrow()).takeovers;
  const sweep = async (owner: string) => ({ ended: await endExpiredTurns(db, nowIso(), BOUND), taken: await takeOverExpiredTurns(db, owner, 60_000, BOUND) });

  it('counts a lease that ran out unrenewed, and at the bound ends the turn instead of taking it', async () => {
    const id = await turnHeldBy('alpha', 'running');
    for (const [owner, count] of [['beta', 1], ['gamma', 2]] as const) {
      await runOut(id);
      const { ended, taken } = await sweep(owner);
      assert.deepEqual([ended.filter((turn) => turn.id === id), taken.filter((turn) => turn.id === id).length], [[], 1]);
      assert.equal(await takeoversOf(id), count);
    }
    await runOut(id);
    const { ended, taken } = await sweep('delta');
    assert.equal(taken.filter((turn) => turn.id === id).length, 0, 'not taken over a third time');
    const [end] = ended.filter((turn) => turn.id === id);
    assert.deepEqual([end?.status, end?.attempt], ['failed', 4]);
    assert.match(end!.error!, /^interrupted: its lease ran out unrenewed after 2 takeovers \(--max-turn-takeovers\)/);
  });

  it('does not count a released lease, even at the bound', async () => {
    const id = await turnHeldBy('alpha', 'running');
    await db.updateTable('turns').set({ takeovers: BOUND.maxTakeovers }).where('id', '=', id).execute();
    await releaseTurnLeases(db, 'alpha', [id]);
    const { ended, taken } = await sweep('beta');
    assert.deepEqual([ended.filter((turn) => turn.id === id), taken.filter((turn) => turn.id === id).length], [[], 1]);
    assert.equal(await takeoversOf(id), BOUND.maxTakeovers);
  });

  it('does not count a queued turn moved to an instance with room', async () => {
    const id = await turnHeldBy('alpha', 'queued');
    const moved = await takeOldestQueuedTurn(db, 'default', 'beta', 60_000, new Date(Date.now() + 1_000).toISOString());
    assert.equal(moved?.id, id);
    assert.equal(await takeoversOf(id), 0);
  });
});
