// The pacing of turn starts and ends (src/runtime/turn/turn-pacer.ts): one per turn of the event
// loop, in order, so that what other callbacks wait for runs between two of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pacedTurnWork } from '../../../src/runtime/turn/turn-pacer.ts';

test('paced work is let go one per turn of the event loop, in the order it asked, with other callbacks between', async () => {
  const log: string[] = [];
  const works = [1, 2, 3].map((n) =>
    pacedTurnWork().then(() => {
      log.push(`work ${n}`);
      // what a stream's callback would be: it runs at the next turn of the loop
      setImmediate(() => log.push(`callback after ${n}`));
    }),
  );
  await Promise.all(works);
  await new Promise((resolve) => setImmediate(resolve));
  // each work is let go at its own turn, before the callbacks queued by the work before it;
  // let go all at once, the three works would come first and every callback after them
  assert.deepEqual(log, ['work 1', 'work 2', 'callback after 1', 'work 3', 'callback after 2', 'callback after 3']);
});

test('work asked for after the queue drained is let go too', async () => {
  await pacedTurnWork();
  let released = false;
  await pacedTurnWork().then(() => (released = true));
  assert.equal(released, true);
});
