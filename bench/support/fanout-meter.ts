/**
 * Many SSE subscribers that count what they get: frames, gaps in the id sequence, replay.reset
 * frames, and delivery latency (read time − the event's own `at`, both wall clock in ms).
 */
import { SseSubscriber, type SseFrame } from './sse-subscriber.ts';

const LATENCY_BUCKETS = 60_000;

export interface FanoutResult {
  subscribers: number;
  /** frames delivered to all subscribers together */
  frames: number;
  /** ids skipped, replay.reset frames and ids missing at the end, over all subscribers */
  lost: number;
  /** first frame read → last frame read, ms */
  spanMs: number;
  latencyPercentile(fraction: number): number;
}

export class FanoutMeter {
  private readonly subscribers: SseSubscriber[] = [];
  private readonly lastIds: number[] = [];
  private frames = 0;
  private lost = 0;
  private firstReadMs = Number.POSITIVE_INFINITY;
  private lastReadMs = 0;
  /** whole milliseconds of latency → frames, so millions of samples cost nothing */
  private readonly latencies = new Uint32Array(LATENCY_BUCKETS);

  static async connect(url: string, count: number): Promise<FanoutMeter> {
    const meter = new FanoutMeter();
    for (let index = 0; index < count; index++) {
      meter.lastIds.push(-1);
      meter.subscribers.push(await SseSubscriber.connect(url, (frame, readAt) => meter.take(index, frame, readAt)));
    }
    return meter;
  }

  /** Newest id every subscriber has read (-1 before any). */
  lowestLastId(): number {
    return Math.min(...this.lastIds);
  }

  /** Ends a measurement at `finalId`, counting as lost whatever a subscriber has not read up to it. */
  result(finalId: number): FanoutResult {
    const missingAtEnd = this.lastIds.reduce((sum, last) => sum + Math.max(0, finalId - last), 0);
    const latencies = this.latencies;
    const total = latencies.reduce((sum, count) => sum + count, 0);
    return {
      subscribers: this.subscribers.length,
      frames: this.frames,
      lost: this.lost + missingAtEnd,
      spanMs: this.lastReadMs - this.firstReadMs,
      latencyPercentile(fraction) {
        let seen = 0;
        for (let ms = 0; ms < latencies.length; ms++) {
          seen += latencies[ms];
          if (seen >= fraction * total) return ms;
        }
        return Number.NaN;
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.subscribers.map((subscriber) => subscriber.closeAndWait()));
  }

  private take(index: number, frame: SseFrame, readAtMs: number): void {
    this.frames += 1;
    if (readAtMs < this.firstReadMs) this.firstReadMs = readAtMs;
    this.lastReadMs = readAtMs;
    if (frame.id === null) {
      if (frame.event === 'replay.reset') this.lost += 1;
      return;
    }
    const last = this.lastIds[index];
    if (last !== -1 && frame.id > last + 1) this.lost += frame.id - last - 1;
    this.lastIds[index] = frame.id;
    const at = frame.data.indexOf('"at":"');
    if (at !== -1) {
      const latency = Math.max(0, readAtMs - Date.parse(frame.data.slice(at + 6, at + 30)));
      this.latencies[Math.min(LATENCY_BUCKETS - 1, latency)] += 1;
    }
  }
}
