/**
 * When a failed webhook delivery is tried again: exponential backoff with jitter, for 24 h from the
 * event (CONTRACT.md §20: the first retry within 30 s), then the delivery is dropped.
 */

/** The first retry waits 1 to 2 s, each later one twice as long, up to 15 to 30 min. */
export const FIRST_RETRY_MS = 2_000;
export const LONGEST_RETRY_MS = 30 * 60_000;
export const GIVE_UP_AFTER_MS = 24 * 60 * 60_000;

/**
 * The pause after the `failures`-th failed attempt (1 for the first): the exponential step, less
 * up to half of it at random, so receivers that come back are not met by every sender at once.
 */
export function retryDelayMs(failures: number, random: () => number = Math.random): number {
  const step = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  return Math.round(step / 2 + (step / 2) * random());
}
