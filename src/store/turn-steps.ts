/**
 * The durable steps of a cluster's active turns (CONTRACT.md §18, docs/CLUSTER.md "Takeover and
 * resume"): each model response, and each batch of tool results, is one row, written as the turn
 * goes under the turn's attempt (the fence). An instance that takes the turn over reads them back and
 * resumes from the last one. They go with the turn's end.
 */
import type { Db } from './database.ts';
import type { CanonicalItem } from '../domain/canonical-item.ts';
import type { RecordedModelStep, RecordedStep } from '../domain/turn-step.ts';
import { ACTIVE_STATUSES } from '../domain/turn-status.ts';
import { fencedInsert } from './turn-fence.ts';

export interface TurnStep extends RecordedStep {
  /** its place among the turn's steps, from 0 */
  seq: number;
}

/**
 * Appends a step while the turn is active at `attempt` (else StaleTurnWrite, nothing stored): one
 * statement, so one transaction, per step.
 */
export async function appendTurnStep(db: Db, turnId: string, attempt: number, step: TurnStep): Promise<void> {
  const values = { turn_id: turnId, seq: step.seq, attempt, items: JSON.stringify(step.items), model_step: step.modelStep ? JSON.stringify(step.modelStep) : null, receipt: step.receipt ?? null };
  await fencedInsert(db, 'turn_steps', { turnId, attempt, active: true }, values);
}

/** A turn's steps, oldest first. */
export async function readTurnSteps(db: Db, turnId: string): Promise<TurnStep[]> {
  const rows = await db.selectFrom('turn_steps').select(['seq', 'items', 'model_step', 'receipt']).where('turn_id', '=', turnId).orderBy('seq', 'asc').execute();
  return rows.map((row) => ({
    seq: Number(row.seq),
    items: JSON.parse(row.items) as CanonicalItem[],
    modelStep: row.model_step === null ? null : (JSON.parse(row.model_step) as RecordedModelStep),
    ...(row.receipt === null ? {} : { receipt: row.receipt }),
  }));
}

/** The steps of turns that have ended: nobody resumes them any more. */
export async function deleteEndedTurnSteps(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('turn_steps')
    .where('turn_id', 'not in', (eb) => eb.selectFrom('turns').select('id').where('status', 'in', [...ACTIVE_STATUSES]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
