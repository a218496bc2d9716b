import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { applyTurnTransition, canApply, isTerminal, TurnTransitionRefused, type TurnLifecycle, type TurnTransition } from '../../src/domain/turn-lifecycle.ts';
import type { TurnStatus } from '../../src/domain/turn-status.ts';

type Output = { answer: string };

const TURN_STATUSES: TurnStatus[] = ['queued', 'running', 'waiting_for_input', 'completed', 'failed', 'cancelled'];

const AT = '2026-01-01T00:00:05.000Z';

function turn(status: TurnStatus, extra: Partial<TurnLifecycle<Output>> = {}): TurnLifecycle<Output> & { id: string } {
  const startedAt = status === 'queued' ? null : '2026-01-01T00:00:01.000Z';
  return { id: 't1', status, startedAt, finishedAt: null, error: null, output: null, ...extra };
}

const TRANSITIONS: TurnTransition<Output>[] = [
  { kind: 'start', at: AT },
  { kind: 'wait' },
  { kind: 'resume' },
  { kind: 'complete', at: AT, output: { answer: 'done' } },
  { kind: 'fail', at: AT, error: 'provider_error: boom' },
  { kind: 'cancel', at: AT, error: 'cancelled' },
];

/** SPEC.md §3 plus CONTRACT.md §5: every allowed (from, transition) pair and where it leads. */
const ALLOWED: Record<string, TurnStatus> = {
  'queued start': 'running',
  'queued fail': 'failed',
  'queued cancel': 'cancelled',
  'running wait': 'waiting_for_input',
  'running complete': 'completed',
  'running fail': 'failed',
  'running cancel': 'cancelled',
  'waiting_for_input resume': 'running',
  'waiting_for_input fail': 'failed',
  'waiting_for_input cancel': 'cancelled',
};

describe('turn state machine', () => {
  it('a queued turn starts: running, startedAt set, turn.started published', () => {
    const step = applyTurnTransition(turn('queued'), { kind: 'start', at: AT });
    assert.deepEqual([step.record.status, step.record.startedAt, step.record.finishedAt], ['running', AT, null]);
    assert.deepEqual(step.event, { type: 'turn.started', data: {} });
  });

  it('waiting for a human and resuming change the status only, and publish nothing of their own', () => {
    const waiting = applyTurnTransition(turn('running'), { kind: 'wait' });
    assert.equal(waiting.record.status, 'waiting_for_input');
    assert.equal(waiting.event, null);
    const resumed = applyTurnTransition(waiting.record, { kind: 'resume' });
    assert.equal(resumed.record.status, 'running');
    assert.equal(resumed.event, null);
    assert.equal(resumed.record.startedAt, turn('running').startedAt);
  });

  it('a running turn completes with its output, no error, finishedAt set, turn.completed published', () => {
    const step = applyTurnTransition(turn('running', { error: 'stale' }), { kind: 'complete', at: AT, output: { answer: 'done' } });
    assert.deepEqual([step.record.status, step.record.error, step.record.finishedAt, step.record.output], ['completed', null, AT, { answer: 'done' }]);
    assert.deepEqual(step.event, { type: 'turn.completed', data: { error: null } });
  });

  for (const from of ['queued', 'running', 'waiting_for_input'] as const) {
    it(`a ${from} turn fails with its error and publishes turn.failed`, () => {
      const step = applyTurnTransition(turn(from), { kind: 'fail', at: AT, error: 'turn_queue_full: the server queue is full' });
      assert.deepEqual([step.record.status, step.record.error, step.record.finishedAt], ['failed', 'turn_queue_full: the server queue is full', AT]);
      assert.deepEqual(step.event, { type: 'turn.failed', data: { error: 'turn_queue_full: the server queue is full' } });
      assert.equal(step.record.startedAt, turn(from).startedAt, 'failing never pretends the turn started');
    });

    it(`a ${from} turn is cancelled and publishes turn.cancelled`, () => {
      const step = applyTurnTransition(turn(from), { kind: 'cancel', at: AT, error: 'cancelled' });
      assert.deepEqual([step.record.status, step.record.error, step.record.finishedAt], ['cancelled', 'cancelled', AT]);
      assert.deepEqual(step.event, { type: 'turn.cancelled', data: { error: 'cancelled' } });
    });
  }

  it('a turn cancelled while it only waited in the queue has no error', () => {
    const step = applyTurnTransition(turn('queued'), { kind: 'cancel', at: AT, error: null });
    assert.deepEqual([step.record.status, step.record.error], ['cancelled', null]);
    assert.deepEqual(step.event, { type: 'turn.cancelled', data: { error: null } });
  });

  it('a failure keeps the answer it is given (history not stored) and otherwise the output it had', () => {
    const kept = applyTurnTransition(turn('running'), { kind: 'fail', at: AT, error: 'internal_error', output: { answer: 'bounded' } });
    assert.deepEqual(kept.record.output, { answer: 'bounded' });
    const none = applyTurnTransition(turn('running'), { kind: 'fail', at: AT, error: 'internal_error' });
    assert.equal(none.record.output, null);
  });

  it('never changes the record it is given, and keeps fields it does not own', () => {
    const before = turn('running');
    const frozen = structuredClone(before);
    const step = applyTurnTransition(before, { kind: 'complete', at: AT, output: { answer: 'x' } });
    assert.deepEqual(before, frozen);
    assert.equal(step.record.id, 't1');
  });

  it('refuses every other transition, from every status, terminal ones included', () => {
    let refused = 0;
    for (const from of TURN_STATUSES) {
      for (const transition of TRANSITIONS) {
        const key = `${from} ${transition.kind}`;
        if (key in ALLOWED) {
          assert.equal(applyTurnTransition(turn(from), transition).record.status, ALLOWED[key], key);
          assert.equal(canApply(from, transition.kind), true, key);
          continue;
        }
        refused++;
        assert.equal(canApply(from, transition.kind), false, key);
        assert.throws(
          () => applyTurnTransition(turn(from), transition),
          (error: unknown) => error instanceof TurnTransitionRefused && error.from === from && error.transition === transition.kind,
          key,
        );
      }
    }
    // 6 statuses × 6 transitions, 10 allowed
    assert.equal(refused, 26);
  });

  it('completed, failed and cancelled are the terminal statuses', () => {
    assert.deepEqual(TURN_STATUSES.filter(isTerminal), ['completed', 'failed', 'cancelled']);
    assert.equal(isTerminal('not a status'), false);
  });
});
