/**
 * One full garbage collection when the server goes idle after the heap grew: no turn running or
 * queued and no request received for QUIET_MS. V8 collects the old generation when it reaches
 * its limit, not when the work stops, so without this a server that went quiet after a busy
 * period keeps the garbage of that period (and its young generation) resident until the next
 * busy one. V8's own memory reducer would do it, but only seconds later, if ever, on a quiet
 * Node process. A collection of agentd's heap takes tens of milliseconds, run only while nothing
 * is waiting for the event loop, at most once per idle period and only when the heap grew.
 *
 * A regular collection keeps the young generation (up to 128 MB on Node 24, grown under load): V8
 * shrinks it at a full collection only when the allocation rate it measured over the last 5 s is
 * low, which half a second after the work is too early to see. A memory-reducing collection (V8's
 * "last resort" flavour, which Node 24's `gc` accepts) gives it back at once. Two collections use
 * it: the first one, which collects start-up's garbage (start-up grows the young generation to
 * 8–16 MB, a tenth of idle RSS, and no load is waiting for it), and a second one once the server
 * has been quiet for 30 s. Not sooner after a load: a young generation shrunk to 1 MB takes 5–10 s
 * of load to grow back, and until it has, requests cost 20–40% more CPU in collections (measured
 * on GET one session, docs/BENCHMARKS.md), so bursts a few seconds apart keep it.
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
  /** how long nothing must have happened before the young generation is given back (at least V8's 5 s look-back) */
  youngQuietMs: number;
  /** the young generation's committed bytes above which giving it back is worth a collection */
  youngBytes: number;
}

export const IDLE_COLLECTION: IdleCollectionOptions = {
  quietMs: 500,
  checkEveryMs: 250,
  growthBytes: 8 * 1024 * 1024,
  youngQuietMs: 30_000,
  youngBytes: 4 * 1024 * 1024,
};

export interface IdleState {
  /** when activity was last seen, ms */
  busyAt: number;
  /** committed heap bytes right after the last collection (0 before the first) */
  heapAfterCollection: number;
  /** the busyAt of the idle period whose young generation was last given back (-1: none) */
  youngCollectedFor: number;
}

/** Whether to collect now: quiet long enough, and the heap grew enough since the last collection. */
export function shouldCollect(state: IdleState, now: number, heapBytes: number, options: IdleCollectionOptions): boolean {
  return now - state.busyAt >= options.quietMs && heapBytes - state.heapAfterCollection >= options.growthBytes;
}

/** Whether to collect to give the young generation back: quiet for V8's whole look-back, once per idle period. */
export function shouldShrinkYoung(state: IdleState, now: number, youngBytes: number, options: IdleCollectionOptions): boolean {
  return now - state.busyAt >= options.youngQuietMs && youngBytes >= options.youngBytes && state.youngCollectedFor !== state.busyAt;
}

/** Samples `activity` and collects once per idle period; the timer never keeps the process alive. */
export function collectWhenIdle(activity: () => ServerActivity, log: { debug(details: object, message: string): void }, options: IdleCollectionOptions = IDLE_COLLECTION): { stop(): void } {
  const collect = fullCollection();
  const state: IdleState = { busyAt: Date.now(), heapAfterCollection: 0, youngCollectedFor: -1 };
  let seenRequests = activity().requests;
  const collectAndLog = (message: string, reduceMemory: boolean) => {
    const before = v8.getHeapStatistics();
    const youngBefore = youngGenerationBytes();
    const startedAt = performance.now();
    collect(reduceMemory);
    const after = v8.getHeapStatistics();
    // committed pages go back to the system while V8 sweeps, after this figure is read
    state.heapAfterCollection = after.total_heap_size;
    log.debug(
      {
        usedMbBefore: toMb(before.used_heap_size),
        usedMbAfter: toMb(after.used_heap_size),
        committedMbBefore: toMb(before.total_heap_size),
        youngMbBefore: toMb(youngBefore),
        youngMbAfter: toMb(youngGenerationBytes()),
        ms: Math.round(performance.now() - startedAt),
      },
      message,
    );
  };
  const timer = setInterval(() => {
    const now = activity();
    if (now.activeTurns > 0 || now.requests !== seenRequests) {
      seenRequests = now.requests;
      state.busyAt = Date.now();
      return;
    }
    if (shouldCollect(state, Date.now(), v8.getHeapStatistics().total_heap_size, options)) {
      // the first collection is start-up's: what start-up grew, no load is waiting to reuse
      collectAndLog('collected garbage while idle', state.heapAfterCollection === 0);
    } else if (shouldShrinkYoung(state, Date.now(), youngGenerationBytes(), options)) {
      state.youngCollectedFor = state.busyAt;
      collectAndLog('gave the young generation back while idle', true);
    }
  }, options.checkEveryMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * V8's `gc` without starting node with --expose-gc: the flag at run time gives the function to
 * contexts created afterwards, so one new context hands it over. The main context stays without a
 * global `gc`. A memory-reducing collection also gives the young generation back whatever the
 * recent allocation rate (V8's "last resort" flavour: full collections until nothing more is freed,
 * tens of milliseconds on agentd's idle heap).
 */
function fullCollection(): (reduceMemory: boolean) => void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as (options: { type: 'major'; execution: 'sync'; flavor: 'regular' | 'last-resort' }) => void;
  return (reduceMemory) => gc({ type: 'major', execution: 'sync', flavor: reduceMemory ? 'last-resort' : 'regular' });
}

function youngGenerationBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

function toMb(bytes: number): number {
  return Math.round(bytes / 104857.6) / 10;
}
