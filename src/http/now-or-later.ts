/**
 * A value that is here now, or a promise of it. The hottest reads (a cached session, a cached
 * page, the single-user runtime) answer at once: going through a promise for them cost a turn of
 * the microtask queue per step, about 3% of a GET of one session (docs/BENCHMARKS.md).
 */
export type NowOrLater<T> = T | Promise<T>;

/** `next` applied to the value at once when it is here, else when the promise resolves. */
export function andThen<T, R>(value: NowOrLater<T>, next: (value: T) => NowOrLater<R>): NowOrLater<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
