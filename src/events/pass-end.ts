/**
 * Work booked for the end of the current pass of the event loop, once its I/O callbacks have run
 * (one setImmediate for all of it). Two kinds, always in this order:
 * - `resume`: the fan-out a delivery slice put off (delivery-slice.ts); what it puts off again waits
 *   for the next pass, so a pass never grows without bound;
 * - `flush`: the frames held during the pass leave (frame-batch.ts), those the resumed fan-out
 *   has just written included, so no frame waits a pass longer because its fan-out was resumed.
 *
 * One per event log, so per boundary: a boundary's pass end runs only its own fan-out and frames.
 */
type Task = () => void;

export class PassEnd {
  private resumes: Task[] = [];
  private flushes: Task[] = [];
  private booked = false;
  private readonly endPass = (): void => {
    this.booked = false;
    const resuming = this.resumes;
    this.resumes = [];
    for (const task of resuming) task();
    const flushing = this.flushes;
    this.flushes = [];
    for (const task of flushing) task();
  };

  resume(task: Task): void {
    this.resumes.push(task);
    this.book();
  }

  flush(task: Task): void {
    this.flushes.push(task);
    this.book();
  }

  private book(): void {
    if (this.booked) return;
    this.booked = true;
    setImmediate(this.endPass);
  }
}
