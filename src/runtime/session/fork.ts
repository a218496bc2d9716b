import { ApiError } from '../../domain/errors.ts';
import { nowIso, uuidv7 } from '../../domain/ids.ts';
import type { ForkSessionBody } from '../../api/schemas.ts';
import { insertForkedSession } from '../../store/fork.ts';
import { nextHistoryIndex } from '../../store/history.ts';
import type { SessionRecord } from '../../domain/session.ts';
import type { Boundary } from '../boundary.ts';
import type { SessionService } from './sessions.ts';

/** What a fork needs from the boundary runtime (BoundaryRuntime fits). */
export interface ForkSources {
  boundary: Boundary;
  sessions: Pick<SessionService, 'get' | 'whileIdle' | 'requireSetupFinished' | 'resolveCwd' | 'announceCreated'>;
}

/**
 * Forks a session (CONTRACT.md §4). `{}` copies every durable turn and may rename the child or move
 * it to another cwd; `{throughTurn: N}` copies turns 0..N and inherits title and cwd. The child is
 * a new session with its own copy of the history, so its model context and later turns are its own.
 *
 * The child starts where any new session starts for everything that is not transcript: usage
 * zero (it has spent nothing yet), not archived, plan mode off, no session-wide approvals, and no
 * repository of its own (a parent's checkout stays owned by the parent, and passes to the oldest
 * session still working in it when the parent is deleted).
 */
export async function forkSession(sources: ForkSources, rawParentId: string, body: ForkSessionBody): Promise<SessionRecord> {
  const parent = await sources.sessions.get(rawParentId);
  const atTurn = body.throughTurn !== undefined;
  if (atTurn && (body.title !== undefined || body.cwd !== undefined)) {
    throw new ApiError('unsupported_fork_shape', 'throughTurn forks inherit title and cwd; rename or move the fork afterwards');
  }
  sources.sessions.requireSetupFinished(parent);
  const cwd = body.cwd === undefined ? parent.cwd : sources.sessions.resolveCwd(body.cwd);
  const now = nowIso();
  const child: SessionRecord = {
    ...parent,
    id: uuidv7(),
    createdAt: now,
    updatedAt: now,
    cwd,
    title: body.title ?? parent.title,
    titleIsManual: body.title !== undefined || parent.titleIsManual,
    archived: false,
    usage: { input: 0, output: 0, cached: 0 },
    // the fork spends from nothing; its context is the parent's, whose history it carries
    spentCostUsd: parent.spentCostUsd === null ? null : 0,
    repository: null,
    ownsCheckout: false,
    planMode: false,
    allowances: [],
  };
  await sources.sessions.whileIdle(parent.id, async (db) => {
    const end = await nextHistoryIndex(db, parent.id);
    if (atTurn && body.throughTurn! >= end) {
      throw new ApiError('fork_point_out_of_range', end === 0 ? 'the session has no durable turn to fork at' : `throughTurn must be from 0 to ${end - 1}`);
    }
    await insertForkedSession(db, sources.boundary.id, child, parent.id, atTurn ? body.throughTurn! : end - 1);
  });
  sources.sessions.announceCreated(child);
  return child;
}
