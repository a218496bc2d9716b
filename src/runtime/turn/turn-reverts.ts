/**
 * POST /v1/turns/:id/revert (CONTRACT.md §20): the turn's kept revert (store/turn-reverts.ts)
 * written back where the boundary's tools write (exec/revert-through-executor.ts), refused while
 * a turn of the session is active, announced as `turn.reverted`. With --cluster the whole revert
 * holds the session's lock (store/turn-leases.ts changeIdleSession): a turn active on any instance
 * refuses it, and a turn admitted on another instance meanwhile waits for it to end.
 */
import { ApiError } from '../../domain/errors.ts';
import { findSession } from '../../store/sessions.ts';
import { findTurnRevert, markTurnReverted, readRevertContents, revertBytesKept, turnChangedNothing } from '../../store/turn-reverts.ts';
import { isTerminal } from '../../domain/turn-lifecycle.ts';
import { revertThroughExecutor, RevertTooLarge } from '../../exec/revert-through-executor.ts';
import { ExecutorError } from '../../exec/executor.ts';
import type { Boundary } from '../boundary.ts';
import type { EventHub } from '../event-hub.ts';
import type { TurnRecord } from '../../domain/turn.ts';
import type { Db } from '../../store/database.ts';
import type { RevertEntry } from '../../domain/turn-revert.ts';
import { changeIdleSession, SESSION_BUSY } from '../../store/turn-leases.ts';

export interface TurnRevertDeps {
  boundary: Boundary;
  hub: EventHub;
  /** a turn of the session is queued, running or waiting (a new one cannot start during a revert) */
  sessionBusy(sessionId: string): boolean;
}

export class TurnReverts {
  /** sessions with a revert under way: a new turn there is refused as busy */
  private readonly reverting = new Set<string>();

  constructor(private readonly deps: TurnRevertDeps) {}

  isReverting(sessionId: string): boolean {
    return this.reverting.has(sessionId);
  }

  async revert(turn: TurnRecord): Promise<{ reverted: string[] }> {
    const busy = () => new ApiError('session_busy', 'the session has an active turn');
    if (this.deps.sessionBusy(turn.sessionId) || this.reverting.has(turn.sessionId)) throw busy();
    this.reverting.add(turn.sessionId);
    try {
      const { db, cluster } = this.deps.boundary;
      // With --cluster the file writes run inside the transaction: a sandbox that does not answer holds the lock until its timeout.
      const outcome = cluster ? await changeIdleSession(db, turn.sessionId, (trx) => this.revertIdle(trx, turn)) : await this.revertIdle(db, turn);
      if (outcome === SESSION_BUSY) throw busy();
      // announced once durable
      this.deps.hub.emit('turn.reverted', turn.sessionId, turn.id, { paths: outcome.reverted });
      return outcome;
    } finally {
      this.reverting.delete(turn.sessionId);
    }
  }

  /** The revert itself, its session known to be idle; `db` is the boundary's store or the transaction holding the session's lock. */
  private async revertIdle(db: Db, turn: TurnRecord): Promise<{ reverted: string[] }> {
    const { boundary } = this.deps;
    const kept = await findTurnRevert(db, boundary.id, turn.id);
    // A turn that ran no writing call keeps no row: there is nothing to write back.
    if (!kept && boundary.limits.revertHistory > 0 && isTerminal(turn.status) && (await turnChangedNothing(db, turn.sessionId, turn.id))) {
      return { reverted: [] };
    }
    if (!kept) {
      throw new ApiError('revert_unavailable', `the turn's earlier file contents are not kept: only the latest ${boundary.limits.revertHistory} turns of a session that ran a writing call can be reverted (--revert-history)`);
    }
    if (kept.status === 'unavailable') throw new ApiError('revert_unavailable', `the turn cannot be reverted: ${kept.reason}`);
    if (kept.status === 'reverted') throw new ApiError('revert_conflict', 'the turn was reverted already', { paths: kept.entries.map((entry) => entry.path) });
    const session = await findSession(db, boundary.id, turn.sessionId);
    if (!session) throw new ApiError('turn_not_found', 'no such turn');
    const before = await readRevertContents(db, turn.id);
    const contents = Object.fromEntries([...before].map(([hash, bytes]) => [hash, bytes.toString('base64')]));
    const space = boundary.revertSpace;
    if (!space) return this.writeBack(db, turn, session.cwd, kept.entries, contents);
    // The room held for this turn's bytes on the tenant's disk is what writing them back needs;
    // afterwards the room held is what is still kept (all of it again when the revert did not happen).
    await space.hold(Math.max(0, (await revertBytesKept(db, boundary.id)) - [...before.values()].reduce((sum, bytes) => sum + bytes.length, 0)));
    try {
      return await this.writeBack(db, turn, session.cwd, kept.entries, contents);
    } finally {
      await space.hold(await revertBytesKept(db, boundary.id)).catch(() => {}); // what the guest took meanwhile stays its own
    }
  }

  /** Writes the kept versions back and marks the turn reverted. */
  private async writeBack(db: Db, turn: TurnRecord, cwd: string, entries: RevertEntry[], contents: Record<string, string>): Promise<{ reverted: string[] }> {
    const paths = entries.map((entry) => entry.path);
    let outcome;
    try {
      outcome = await revertThroughExecutor(this.deps.boundary.tools, cwd, { entries, contents });
    } catch (error) {
      if (error instanceof RevertTooLarge) throw new ApiError('revert_unavailable', error.message);
      // The sandbox that did not answer, or a file system that refused a write, is no client's fault and
      // no reason for a 500: the revert may be asked again once the cause is gone.
      throw new ApiError('revert_unavailable', `the turn's files could not be written back (${failureKind(error)}); try again later`);
    }
    if (!outcome.ok) throw new ApiError('revert_conflict', 'files of the turn changed since; nothing was reverted', { paths: outcome.conflicts });
    if (!(await markTurnReverted(db, turn.id))) throw new ApiError('revert_conflict', 'the turn was reverted already', { paths });
    return { reverted: outcome.reverted };
  }
}

/** What stopped a revert, named without paths or output (they can quote the workspace). */
function failureKind(error: unknown): string {
  if (error instanceof ExecutorError) return error.reason === 'sandbox' ? 'the sandbox did not answer' : 'the write-back did not run in the sandbox';
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? `the file system refused: ${code}` : 'an unexpected failure';
}
