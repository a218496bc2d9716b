import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventLog } from '../../src/events/event-log.ts';

describe('agentd_events_dropped_total at its source', () => {
  it('is told once per reset of a subscriber too slow to keep up, not per frame dropped, and never for one that keeps up', () => {
    let resets = 0;
    const log = new EventLog({ replayLimit: 3, firstId: 1, onSlowSubscriberReset: () => resets++ });
    let resume: (() => void) | null = null;
    let writable = false;
    const frames: string[] = [];
    log.subscribe(null, { write: (frame) => (frames.push(frame), writable), onDrain: (callback) => (resume = callback) });
    const keepingUp: string[] = [];
    log.subscribe(null, { write: (frame) => (keepingUp.push(frame), true), onDrain: () => {} });
    for (let index = 0; index < 10; index++) log.append('warning', { data: { text: `event ${index}` } });
    assert.equal(resets, 1, 'one reset however many frames it lost');
    assert.equal(keepingUp.length, 10);
    // it drains (and gets its replay.reset), then falls behind again: a second reset
    frames.length = 0;
    writable = true;
    resume!();
    assert.match(frames[0], /replay\.reset/);
    writable = false;
    for (let index = 0; index < 10; index++) log.append('warning', { data: { text: `later ${index}` } });
    assert.equal(resets, 2);
  });
});
