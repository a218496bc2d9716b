/**
 * --cluster: the agents view of a turn this instance runs is stored as it changes, so every
 * instance answers GET /v1/turns/:id/agents (CONTRACT.md §18, docs/CLUSTER.md). Changes come in
 * bursts (a child's steps); the view is stored at most every WRITE_EVERY_MS, the newest one each
 * time, one write in flight, and once more when the turn ends. Each write names the turn's
 * attempt: an instance that lost the turn stores nothing.
 */
import type { Logger } from 'pino';
import type { Db } from '../../store/database.ts';
import { storeTurnAgents } from '../../store/turn-agents.ts';
import { StaleTurnWrite } from '../../store/turn-fence.ts';
import type { ActiveTurn } from './active-turns.ts';

const WRITE_EVERY_MS = 250;

export function shareAgentsView(db: Db, turn: ActiveTurn, logger: Logger): void {
  let dirty = false;
  let writing: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let ended = false;

  const write = (): void => {
    timer = null;
    if (writing || !dirty) return;
    dirty = false;
    writing = storeTurnAgents(db, turn.record.id, turn.record.attempt, JSON.stringify(turn.agents.view()))
      .catch((error: unknown) => {
        // taken over: the new owner stores the view now
        if (!(error instanceof StaleTurnWrite)) logger.warn({ err: error, turnId: turn.record.id }, 'could not store the turn\'s agents view');
      })
      .finally(() => {
        writing = null;
        if (dirty) schedule();
      });
  };
  const schedule = (): void => {
    if (timer) return;
    timer = setTimeout(write, ended ? 0 : WRITE_EVERY_MS);
    timer.unref();
  };

  turn.agents.watch(() => {
    dirty = true;
    schedule();
  });
  void turn.finished.then(() => {
    ended = true;
    if (timer) clearTimeout(timer);
    timer = null;
    if (dirty) schedule();
  });
}
