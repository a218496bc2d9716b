/**
 * A turn's start and its end, one per turn of the event loop. Each runs a turn's bookkeeping
 * without giving the loop back (SQLite answers synchronously): its setup up to the first model
 * request, or its end's transaction and announcements. A burst of them, run back to back, held
 * every live stream's deltas behind it: at 1,000 live turns the delivery p99 was made while turns
 * were being admitted and while they ended (docs/BENCHMARKS.md, "Live turns"). Paced, the streams'
 * I/O runs between two of them. Process-wide, as the scheduler is.
 */
const waiting: (() => void)[] = [];
let next = 0;
let scheduled = false;

/** Resolves at a later turn of the event loop, after the ones already waiting, one per turn. */
export function pacedTurnWork(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(releaseOne);
    }
  });
}

function releaseOne(): void {
  const release = waiting[next]!;
  next += 1;
  if (next < waiting.length) setImmediate(releaseOne);
  else {
    waiting.length = 0;
    next = 0;
    scheduled = false;
  }
  release();
}
