/**
 * V8 heap sizing for the long-running server (docs/BENCHMARKS.md, memory). Node's defaults suit a
 * short batch job: a 32 MB young generation and an old generation allowed to grow to several times
 * its live data between full collections, which left agentd at 250 MB after a load whose live heap
 * is 40 MB. Nothing here is a limit: the heap still grows to whatever live data needs, up to the
 * same crash limit as before; only how far ahead of live data it grows changes.
 *
 * The young generation's maximum is fixed when the isolate is created (--max-semi-space-size given
 * at run time has no effect, and re-executing node to pass it costs a second start-up), but V8
 * reads its growth factor each time it grows new space: growth is allowed until new space reaches
 * YOUNG_GENERATION_MB and stopped there, and allowed again whenever a collection shrank it.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

/** New space (both semi-spaces), as --max-semi-space-size=8 would give: 16 MB instead of 32 MB (8 MB cost ≈ 20% of turns/s). */
export const YOUNG_GENERATION_MB = 16;
/** The old generation may grow to live data × 1.3 before the next full collection, not × 2–4. */
export const OLD_GENERATION_GROWTH_PERCENT = 30;
const V8_GROWTH_FACTOR = 2;

export interface HeapTuning {
  stop(): void;
}

/** Applies the sizing to this process; call before the server's modules load, so start-up obeys it too. */
export function tuneHeapForServer(): HeapTuning {
  v8.setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
  let growing = true;
  const capYoungGeneration = () => {
    const allowGrowth = newSpaceBytes() < YOUNG_GENERATION_MB * 1024 * 1024;
    if (allowGrowth === growing) return;
    growing = allowGrowth;
    v8.setFlagsFromString(`--semi-space-growth-factor=${allowGrowth ? V8_GROWTH_FACTOR : 1}`);
  };
  // Entries arrive after each collection, batched; new space only changes size in a collection.
  const observer = new PerformanceObserver(capYoungGeneration);
  observer.observe({ entryTypes: ['gc'] });
  capYoungGeneration();
  return {
    stop() {
      observer.disconnect();
      v8.setFlagsFromString(`--semi-space-growth-factor=${V8_GROWTH_FACTOR}`);
    },
  };
}

function newSpaceBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}
