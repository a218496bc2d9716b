/**
 * One full garbage collection when the server goes idle after the heap grew: no turn running or
 * queued and no request received for QUIET_MS. V8 collects the old generation when it reaches
 * its limit, not when the work stops, so without this a server that went quiet after a busy
 * period keeps the garbage of that period (and its young generation) resident until the next
 * busy one. V8's own memory reducer would do it, but only seconds later, if ever, on a quiet
 * Node process. A collection of agentd's heap takes tens of milliseconds, run only while nothing
 * is waiting for the event loop, at most once per idle period and only when the heap grew.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

export interface ServerActivity {
  /** requests received since start-up */
  requests: number;
  /** turns running or queued */
  activeTurns: number;
}

export interface IdleCollectionOptions {
  /** how long nothing must have happened */
  quietMs: number;
  /** how often activity is sampled */
  checkEveryMs: number;
  /** heap growth (committed bytes) since the last collection that makes one worth it */
  growthBytes: number;
}

export const IDLE_COLLECTION: IdleCollectionOptions = { quietMs: 500, checkEveryMs: 250, growthBytes: 8 * 1024 * 1024 };

export interface IdleState {
  /** when activity was last seen, ms */
  busyAt: number;
  /** committed heap bytes right after the last collection (0 before the first) */
  heapAfterCollection: number;
}

/** Whether to collect now: quiet long enough, and the heap grew enough since the last collection. */
export function shouldCollect(state: IdleState, now: number, heapBytes: number, options: IdleCollectionOptions): boolean {
  return now - state.busyAt >= options.quietMs && heapBytes - state.heapAfterCollection >= options.growthBytes;
}

/** Samples `activity` and collects once per idle period; the timer never keeps the process alive. */
export function collectWhenIdle(activity: () => ServerActivity, log: { debug(details: object, message: string): void }, options: IdleCollectionOptions = IDLE_COLLECTION): { stop(): void } {
  const collect = fullCollection();
  const state: IdleState = { busyAt: Date.now(), heapAfterCollection: 0 };
  let seenRequests = activity().requests;
  const timer = setInterval(() => {
    const now = activity();
    if (now.activeTurns > 0 || now.requests !== seenRequests) {
      seenRequests = now.requests;
      state.busyAt = Date.now();
      return;
    }
    const before = v8.getHeapStatistics();
    if (!shouldCollect(state, Date.now(), before.total_heap_size, options)) return;
    const startedAt = performance.now();
    collect();
    const after = v8.getHeapStatistics();
    // committed pages go back to the system while V8 sweeps, after this figure is read
    state.heapAfterCollection = after.total_heap_size;
    log.debug(
      { usedMbBefore: toMb(before.used_heap_size), usedMbAfter: toMb(after.used_heap_size), committedMbBefore: toMb(before.total_heap_size), ms: Math.round(performance.now() - startedAt) },
      'collected garbage while idle',
    );
  }, options.checkEveryMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * V8's `gc` without starting node with --expose-gc: the flag at run time gives the function to
 * contexts created afterwards, so one new context hands it over. The main context stays without a
 * global `gc`.
 */
function fullCollection(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

function toMb(bytes: number): number {
  return Math.round(bytes / 104857.6) / 10;
}
