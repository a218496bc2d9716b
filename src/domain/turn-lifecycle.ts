/**
 * The turn state machine of SPEC.md §3, as a pure function: a transition applied to a turn's
 * lifecycle fields yields the changed record and the event to publish (or none), and a transition
 * the machine does not allow is refused with an error. The turn runner is its only caller; it
 * writes the record and publishes the event.
 *
 *   queued ──start──▶ running ──wait──▶ waiting_for_input ──resume──▶ running
 *   running ──complete──▶ completed
 *   queued | running | waiting_for_input ──fail──▶ failed
 *   queued | running | waiting_for_input ──cancel──▶ cancelled
 *
 * Beyond the table of SPEC.md §3: a queued turn fails when a queue is full or its session's
 * repository setup failed (CONTRACT.md §5), and a waiting turn fails when the server cannot store
 * that it waits or resumes.
 */
import type { TurnStatus } from './turn-status.ts';

const TERMINAL_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'cancelled'];

export function isTerminal(status: string): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** The fields of a turn record the state machine changes. */
export interface TurnLifecycle<Output = unknown> {
  status: TurnStatus;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  output: Output | null;
}

export type TurnTransition<Output = unknown> =
  | { kind: 'start'; at: string }
  | { kind: 'wait' }
  | { kind: 'resume' }
  | { kind: 'complete'; at: string; output: Output }
  /** `output`: what the turn answered before it failed (kept when its history could not be stored) */
  | { kind: 'fail'; at: string; error: string; output?: Output | null }
  /** `error`: 'cancelled' once the turn was admitted, null while it only waited in the queue */
  | { kind: 'cancel'; at: string; error: string | null };

type TurnEventType = 'turn.started' | 'turn.completed' | 'turn.failed' | 'turn.cancelled';

export interface TurnStep<T> {
  record: T;
  /** what to publish once the record is written; waiting and resuming publish nothing of their own */
  event: { type: TurnEventType; data: Record<string, never> | { error: string | null } } | null;
}

const ALLOWED_FROM: Record<TurnTransition['kind'], readonly TurnStatus[]> = {
  start: ['queued'],
  wait: ['running'],
  resume: ['waiting_for_input'],
  complete: ['running'],
  fail: ['queued', 'running', 'waiting_for_input'],
  cancel: ['queued', 'running', 'waiting_for_input'],
};

/** A transition the state machine does not allow from the turn's current status. */
export class TurnTransitionRefused extends Error {
  constructor(
    readonly from: TurnStatus,
    readonly transition: TurnTransition['kind'],
  ) {
    super(`a ${from} turn cannot ${transition}`);
    this.name = 'TurnTransitionRefused';
  }
}

export function canApply(status: TurnStatus, kind: TurnTransition['kind']): boolean {
  return ALLOWED_FROM[kind].includes(status);
}

/** Applies one transition; the input record is never changed. */
export function applyTurnTransition<T extends TurnLifecycle>(turn: T, transition: TurnTransition<NonNullable<T['output']>>): TurnStep<T> {
  if (!canApply(turn.status, transition.kind)) throw new TurnTransitionRefused(turn.status, transition.kind);
  switch (transition.kind) {
    case 'start':
      return { record: { ...turn, status: 'running', startedAt: transition.at }, event: { type: 'turn.started', data: {} } };
    case 'wait':
      return { record: { ...turn, status: 'waiting_for_input' }, event: null };
    case 'resume':
      return { record: { ...turn, status: 'running' }, event: null };
    case 'complete':
      return terminal({ ...turn, status: 'completed', error: null, finishedAt: transition.at, output: transition.output });
    case 'fail':
      return terminal({ ...turn, status: 'failed', error: transition.error, finishedAt: transition.at, output: transition.output ?? turn.output });
    case 'cancel':
      return terminal({ ...turn, status: 'cancelled', error: transition.error, finishedAt: transition.at });
  }
}

function terminal<T extends TurnLifecycle>(record: T): TurnStep<T> {
  const type = record.status === 'completed' ? 'turn.completed' : record.status === 'cancelled' ? 'turn.cancelled' : 'turn.failed';
  return { record, event: { type, data: { error: record.error } } };
}
