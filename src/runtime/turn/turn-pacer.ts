/**
 * A turn's start and its end, one per turn of the event loop. Each runs a turn's bookkeeping
 * without giving the loop back (SQLite answers synchronously): its setup up to the first model
 * request, or its end's transaction and announcements. A burst of them, run back to back, held
 * every live stream's deltas behind it: at 1,000 live turns the delivery p99 was made while turns
 * were being admitted and while they ended (docs/BENCHMARKS.md, "Live turns"). Paced, the streams'
 * I/O runs between two of them. Process-wide, as the scheduler is.
 */
const waiting: (() => void)[] = [];

/** Resolves at a later turn of the event loop, after the ones already waiting, one per turn. */
export function pacedTurnWork(): Promise<void> {
  return new Promise((resolve) => {
    if (waiting.push(resolve) === 1) setImmediate(releaseOne);
  });
}

function releaseOne(): void {
  const release = waiting.shift()!;
  if (waiting.length > 0) setImmediate(releaseOne);
  release();
}
