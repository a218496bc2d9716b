import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassEnd } from '../../src/events/pass-end.ts';
import { EventLog } from '../../src/events/event-log.ts';

/**
 * Resolves after `count` more passes of the event loop. Counted in setImmediate hops, not waited
 * for with a timer: on a loaded machine a timer can fall due before the pass's check phase, and the
 * test would look before the pass it is about had ended.
 */
const passesLater = (count = 3) =>
  new Promise<void>((resolve) => {
    const hop = (left: number) => (left === 0 ? resolve() : setImmediate(() => hop(left - 1)));
    hop(count);
  });

describe('pass end: resumed fan-out first, then the flush of what the pass wrote', () => {
  it('runs the resumes before the flushes whatever the order they were booked in', async () => {
    const passEnd = new PassEnd();
    const ran: string[] = [];
    passEnd.flush(() => ran.push('flush'));
    passEnd.resume(() => ran.push('resume'));
    assert.deepEqual(ran, [], 'nothing runs inside the callback that booked it');
    await passesLater();
    assert.deepEqual(ran, ['resume', 'flush']);
  });

  it('flushes what a resume wrote in the same pass, and leaves what a resume puts off again to the next pass', async () => {
    const passEnd = new PassEnd();
    const ran: string[] = [];
    passEnd.resume(() => {
      ran.push('resume 1');
      passEnd.resume(() => ran.push('resume 2'));
      passEnd.flush(() => ran.push('flush of resume 1'));
    });
    setImmediate(() => ran.push('an immediate booked before the pass ended'));
    await passesLater();
    assert.deepEqual(ran, ['resume 1', 'flush of resume 1', 'an immediate booked before the pass ended', 'resume 2']);
  });

  it('belongs to one event log: a second boundary\'s log has its own pass end and frame batch', () => {
    const first = new EventLog({ replayLimit: 4, firstId: 1 });
    const second = new EventLog({ replayLimit: 4, firstId: 1 });
    assert.notEqual(first.passEnd, second.passEnd);
    assert.notEqual(first.frameBatch, second.frameBatch);
  });
});
