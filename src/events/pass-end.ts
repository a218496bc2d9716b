/**
 * Work booked for the end of the current pass of the event loop, once its I/O callbacks have run
 * (one setImmediate for all of it). Two kinds, always in this order:
 * - `resume`: the fan-out a delivery slice put off (delivery-slice.ts); what it puts off again waits
 *   for the next pass, so a pass never grows without bound;
 * - `flush`: the frames held during the pass leave (http/frame-batch.ts), those the resumed fan-out
 *   has just written included, so no frame waits a pass longer because its fan-out was resumed.
 */
type Task = () => void;

let resumes: Task[] = [];
let flushes: Task[] = [];
let booked = false;

export function resumeAtPassEnd(task: Task): void {
  resumes.push(task);
  book();
}

export function flushAtPassEnd(task: Task): void {
  flushes.push(task);
  book();
}

function book(): void {
  if (booked) return;
  booked = true;
  setImmediate(endPass);
}

function endPass(): void {
  booked = false;
  const resuming = resumes;
  resumes = [];
  for (const task of resuming) task();
  const flushing = flushes;
  flushes = [];
  for (const task of flushing) task();
}
