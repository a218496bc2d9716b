/**
 * Turn leases of a cluster (CONTRACT.md §18, docs/CLUSTER.md): the instance that admits a turn
 * holds its lease and renews it; a lease not renewed in time lets another instance take the turn
 * over, which raises its `attempt`, the fencing number every write of the turn names
 * (turns.ts updateTurn). PostgreSQL only: SQLite cannot cluster. Every time is the database's
 * clock, so the instances' clocks need not agree.
 */
import { sql } from 'kysely';
import type { Db } from './database.ts';
import { databaseNowMs, transactionLock } from './turn-fence.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';
import type { TurnRecord, TurnText } from '../domain/turn.ts';
import { newTurnRow, type NewTurnRow } from './turns.ts';
import type { SessionsTable } from './schema.ts';
import { fromRow as sessionFromRow } from './sessions.ts';
import type { SessionRecord } from '../domain/session.ts';
import type { OutboxWrite } from './webhook-outbox.ts';
import { appendExpiredEnds, type OwnerlessEnd } from './ownerless-ends.ts';

/** A turn endExpiredTurns ended. */
export type EndedTurn = OwnerlessEnd;


/**
 * What storing a new turn of a cluster found: stored (past a full queue: the caller fails it),
 * with its session as it was then, or not stored.
 */
export type LeasedAdmission = { stored: 'stored' | 'stored_queue_full'; session: SessionRecord } | 'session_busy' | 'session_not_found';

/**
 * The session's transaction lock (one-bigint advisory key, apart from the database claim's
 * two-integer key in database-claim.ts): a turn's admission (cluster-admission.ts, under the same
 * key) and every change that needs the session idle take it, so none comes between another's
 * check and its write.
 */
function lockSession(trx: Db, sessionId: string): Promise<void> {
  return transactionLock(trx, `agentd session ${sessionId}`);
}

function activeTurnOf(db: Db, sessionId: string) {
  return db.selectFrom('turns').select('id').where('session_id', '=', sessionId).where('status', 'in', [...ACTIVE_STATUSES]).limit(1).executeTakeFirst();
}

/**
 * Inserts a new turn together with its lease, held by `owner` for `leaseMs`: both or neither, and
 * only while no other turn of its session is active on any instance ('session_busy', nothing
 * stored). The check and the insert hold a transaction lock on the session, so two instances
 * admitting a turn of one session at once take turns: the second sees the first's turn. With a
 * `queueLimit`, the boundary's turns still `queued` on any instance are counted first, under a
 * transaction lock on the boundary's queue, so two admissions at once cannot both take the last
 * place; the turn is stored either way, and 'stored_queue_full' says it found no place. A session
 * deleted on another instance since it was read is 'session_not_found'; the session is read again
 * under the lock, so a change another instance made to it before the turn's admission is the turn's.
 * One statement (cluster-admission.ts): no lock is held across a round trip.
 */
export async function insertLeasedTurn(db: Db, turn: TurnRecord, text: TurnText, owner: string, leaseMs: number, queueLimit: number | null = null, movable = false): Promise<LeasedAdmission> {
  const admitted = await admitTurn(db, { ...newTurnRow(turn, text), movable: movable ? 1 : 0 }, queueLimit, owner, leaseMs);
  if (!('session' in admitted)) return admitted.outcome;
  return { stored: admitted.outcome, session: sessionFromRow(admitted.session) };
}

type Admitted = { outcome: 'stored' | 'stored_queue_full'; session: SessionsTable } | { outcome: 'session_busy' | 'session_not_found' };

/** Stores `row` (a new turn) with `owner`'s lease for `leaseMs`, as agentd_admit_turn (store/cluster-admission.ts) decides. */
async function admitTurn(db: Db, row: NewTurnRow & { movable: number }, queueLimit: number | null, owner: string, leaseMs: number): Promise<Admitted> {
  const { rows } = await sql<{ admitted: Admitted }>`select agentd_admit_turn(${JSON.stringify(row)}::jsonb, ${[...ACTIVE_STATUSES]}::text[], ${queueLimit}::integer, ${owner}, ${leaseMs}::bigint) as admitted`.execute(db);
  return rows[0]!.admitted;
}

/** changeIdleSession found a turn of the session active. */
export const SESSION_BUSY = Symbol('session busy');

/**
 * Runs `change` in one transaction, only while no turn of the session is queued, running or
 * waiting on any instance (else SESSION_BUSY, nothing changed). The check and the change hold
 * the session's lock, which a turn's admission (insertLeasedTurn) takes too: an admission on
 * another instance comes wholly before them (and is seen) or wholly after (and sees the change).
 */
export async function changeIdleSession<T>(db: Db, sessionId: string, change: (trx: Db) => Promise<T>): Promise<T | typeof SESSION_BUSY> {
  return db.transaction().execute(async (trx) => {
    await lockSession(trx, sessionId);
    if (await activeTurnOf(trx, sessionId)) return SESSION_BUSY;
    return change(trx);
  });
}

/** What a renewal found of the turns it was given. */
export interface Renewal {
  /** still `owner`'s at the attempt given: renewed */
  kept: Set<string>;
  /** ended at the attempt given (by its owner, whose end has not reached the renewer yet): not lost */
  ended: Set<string>;
}

/**
 * Extends the leases `owner` holds on these turns. A turn neither kept nor ended was taken over
 * (or ended by another instance at a later attempt): its lease is lost.
 */
export async function renewTurnLeases(db: Db, owner: string, turns: ReadonlyMap<string, number>, leaseMs: number): Promise<Renewal> {
  if (turns.size === 0) return { kept: new Set(), ended: new Set() };
  const rows = await db
    .updateTable('turns')
    .set({ lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
    .where('id', 'in', [...turns.keys()])
    .where('lease_owner', '=', owner)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .returning(['id', 'attempt'])
    .execute();
  const kept = new Set(rows.filter((row) => turns.get(row.id) === row.attempt).map((row) => row.id));
  const missing = [...turns.keys()].filter((id) => !kept.has(id));
  if (missing.length === 0) return { kept, ended: new Set() };
  const ended = await db.selectFrom('turns').select(['id', 'attempt']).where('id', 'in', missing).where('status', 'not in', [...ACTIVE_STATUSES]).execute();
  return { kept, ended: new Set(ended.filter((row) => turns.get(row.id) === row.attempt).map((row) => row.id)) };
}

/**
 * A released lease (releaseTurnLeases: a handover on SIGTERM) runs out at the epoch's start; one that
 * ran out unrenewed, at the time it was due. Only the second counts as a takeover against
 * --max-turn-takeovers.
 */
const RELEASED_LEASE_EXPIRY = 0;

/** The bound on a turn's takeovers after its lease ran out unrenewed (--max-turn-takeovers). */
export interface TakeoverBound {
  maxTakeovers: number;
}

/** The error of a turn ended because it ran out of takeovers. */
function takeoversExhaustedError(maxTakeovers: number): string {
  return `interrupted: its lease ran out unrenewed after ${maxTakeovers} takeovers (--max-turn-takeovers), so it is not resumed again`;
}

/**
 * Ends the active turns whose lease ran out and that were asked to be cancelled, or were taken over
 * `bound.maxTakeovers` times already (or only `turnId`, when given), under their next attempt:
 * cancelled, failed with takeoversExhaustedError, or failed `interrupted` should an unmarked turn
 * be named. In the same transaction, the history entries of those that had started
 * (ownerless-ends.ts) and the webhook deliveries `announce` gives. Answers the turns ended, for the
 * caller to publish their ends.
 */
export async function endExpiredTurns(db: Db, finishedAt: string, bound: TakeoverBound, turnId?: string, announce?: (turns: EndedTurn[]) => OutboxWrite | null): Promise<EndedTurn[]> {
  return db.transaction().execute(async (trx) => {
    const ended = await endExpired(trx, finishedAt, bound, turnId);
    await appendExpiredEnds(trx, ended, finishedAt);
    await announce?.(ended)?.(trx);
    return ended;
  });
}

async function endExpired(db: Db, finishedAt: string, { maxTakeovers }: TakeoverBound, turnId: string | undefined): Promise<EndedTurn[]> {
  const uncancelledError = turnId === undefined ? takeoversExhaustedError(maxTakeovers) : 'interrupted';
  let query = db
    .updateTable('turns')
    .set({
      attempt: sql`attempt + 1`,
      status: sql`case when cancel_requested_at is null then 'failed' else 'cancelled' end`,
      error: sql`case when cancel_requested_at is null then ${uncancelledError} else null end`,
      finished_at: finishedAt,
      lease_owner: null,
      lease_expires_at: null,
    })
    .where('status', 'in', [...ACTIVE_STATUSES])
    .where('lease_expires_at', '<', databaseNowMs);
  query =
    turnId === undefined
      ? query.where((eb) => eb.or([eb('cancel_requested_at', 'is not', null), eb.and([eb('takeovers', '>=', maxTakeovers), eb('lease_expires_at', '<>', RELEASED_LEASE_EXPIRY)])]))
      : query.where('id', '=', turnId);
  const rows = await query.returning(['id', 'session_id', 'attempt', 'status', 'error', 'started_at']).execute();
  return rows.map((row) => ({ id: row.id, sessionId: row.session_id, attempt: row.attempt, status: row.status as EndedTurn['status'], error: row.error, startedAt: row.started_at }));
}

/** A turn an instance took over to resume it: its id and the attempt it now runs under. */
export interface TakenTurn {
  id: string;
  attempt: number;
}

/**
 * Takes over, for `owner`, the active turns whose lease ran out (none asked to be cancelled, none
 * out of takeovers: endExpiredTurns ends those): their attempt grows, the lease is `owner`'s for
 * `leaseMs`, and a lease that ran out unrenewed (not one released) counts one more takeover. Of
 * instances sweeping at once each turn goes to one: the second re-reads the row the first
 * changed, and its lease has not run out.
 */
export async function takeOverExpiredTurns(db: Db, owner: string, leaseMs: number, { maxTakeovers }: TakeoverBound): Promise<TakenTurn[]> {
  const rows = await db
    .updateTable('turns')
    .set({
      attempt: sql`attempt + 1`,
      takeovers: sql`takeovers + case when lease_expires_at = ${RELEASED_LEASE_EXPIRY} then 0 else 1 end`,
      lease_owner: owner,
      lease_expires_at: sql`${databaseNowMs} + ${leaseMs}`,
    })
    .where('status', 'in', [...ACTIVE_STATUSES])
    .where('lease_expires_at', '<', databaseNowMs)
    .where('cancel_requested_at', 'is', null)
    .where((eb) => eb.or([eb('takeovers', '<', maxTakeovers), eb('lease_expires_at', '=', RELEASED_LEASE_EXPIRY)]))
    .returning(['id', 'attempt'])
    .execute();
  return rows.map((row) => ({ id: row.id, attempt: row.attempt }));
}

/**
 * Takes, for `owner` (which has a free running slot), the boundary's oldest queued turn that
 * another instance holds and any instance may start (`movable`), not asked to be cancelled: its
 * attempt grows and its lease becomes `owner`'s, so its former holder's writes, the `running` it
 * stores as it starts the turn included, are refused. `for update skip locked`: instances pulling
 * at once take different turns, and a turn whose row its holder is writing (starting it) is left.
 * Only turns admitted before `queuedBefore` (the admitting instance's clock): one its holder is
 * about to start is not moved for nothing.
 */
export async function takeOldestQueuedTurn(db: Db, boundaryId: string, owner: string, leaseMs: number, queuedBefore: string): Promise<TakenTurn | null> {
  const row = await db
    .updateTable('turns')
    .set({ attempt: sql`attempt + 1`, lease_owner: owner, lease_expires_at: sql`${databaseNowMs} + ${leaseMs}` })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('turns')
        .select('id')
        .where('boundary_id', '=', boundaryId)
        .where('status', '=', 'queued')
        .where('movable', '=', 1)
        .where('lease_owner', '<>', owner)
        .where('cancel_requested_at', 'is', null)
        .where('created_at', '<', queuedBefore)
        .orderBy('created_at')
        .orderBy('id')
        .limit(1)
        .forUpdate()
        .skipLocked(),
    )
    .where('status', '=', 'queued')
    .returning(['id', 'attempt'])
    .executeTakeFirst();
  return row ? { id: row.id, attempt: row.attempt } : null;
}

/**
 * Gives up `owner`'s leases on these turns at once (SIGTERM on an instance of a live cluster): the
 * next sweep of another instance takes them over without waiting for the leases to run out.
 */
export async function releaseTurnLeases(db: Db, owner: string, turnIds: readonly string[]): Promise<void> {
  if (turnIds.length === 0) return;
  await db
    .updateTable('turns')
    .set({ lease_expires_at: RELEASED_LEASE_EXPIRY })
    .where('id', 'in', [...turnIds])
    .where('lease_owner', '=', owner)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .execute();
}

/** Marks an active turn to be cancelled by whichever instance runs it; false when it is no longer active. */
export async function requestTurnCancel(db: Db, turnId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('turns')
    .set({ cancel_requested_at: sql`coalesce(cancel_requested_at, ${at})` })
    .where('id', '=', turnId)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Of these turns, the ones another instance was asked to cancel. */
export async function cancelsRequestedAmong(db: Db, turnIds: readonly string[]): Promise<string[]> {
  if (turnIds.length === 0) return [];
  const rows = await db.selectFrom('turns').select('id').where('id', 'in', turnIds).where('cancel_requested_at', 'is not', null).execute();
  return rows.map((row) => row.id);
}
