import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { flushAtPassEnd, resumeAtPassEnd } from '../../src/events/pass-end.ts';

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
    const ran: string[] = [];
    flushAtPassEnd(() => ran.push('flush'));
    resumeAtPassEnd(() => ran.push('resume'));
    assert.deepEqual(ran, [], 'nothing runs inside the callback that booked it');
    await passesLater();
    assert.deepEqual(ran, ['resume', 'flush']);
  });

  it('flushes what a resume wrote in the same pass, and leaves what a resume puts off again to the next pass', async () => {
    const ran: string[] = [];
    resumeAtPassEnd(() => {
      ran.push('resume 1');
      resumeAtPassEnd(() => ran.push('resume 2'));
      flushAtPassEnd(() => ran.push('flush of resume 1'));
    });
    setImmediate(() => ran.push('an immediate booked before the pass ended'));
    await passesLater();
    assert.deepEqual(ran, ['resume 1', 'flush of resume 1', 'an immediate booked before the pass ended', 'resume 2']);
  });
});
