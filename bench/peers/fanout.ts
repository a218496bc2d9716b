/**
 * Many subscribers on one peer's event stream, each with its own socket, frames parsed by
 * eventsource-parser (any SSE shape: multi-line data, string ids or none). Every subscriber should
 * read every event of the turn; what one misses that another read is lost. "Spread" is how long
 * after the first subscriber read an event the others read it: the cost of fanning it out.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { createParser } from 'eventsource-parser';

const SPREAD_BUCKETS = 60_000;

export interface FanoutReading {
  /** frames read by all subscribers together, per second from the first to the last */
  deliveredPerSecond: number;
  frames: number;
  /** events each subscriber should have read: those any of them read */
  events: number;
  /** Σ over subscribers of events another one read and it did not */
  lost: number;
  p99SpreadMs: number;
}

export class FanoutMeter {
  private readonly requests: ClientRequest[] = [];
  private readonly seenBy: Set<string>[] = [];
  private readonly firstReadMs = new Map<string, number>();
  private readonly spreads = new Uint32Array(SPREAD_BUCKETS);
  private frames = 0;
  private firstMs = Number.POSITIVE_INFINITY;
  private lastMs = 0;
  private counting = false;

  private constructor(private readonly isOwnFrame: (event: string | undefined, data: string) => boolean) {}

  /** Connects `count` subscribers one after another; each resolves once its 200 has arrived. */
  static async connect(url: string, count: number, isOwnFrame: FanoutMeter['isOwnFrame']): Promise<FanoutMeter> {
    const meter = new FanoutMeter(isOwnFrame);
    for (let index = 0; index < count; index++) await meter.subscribe(url, index);
    return meter;
  }

  /** Frames read before this (greetings, replays) are not counted. */
  startCounting(): void {
    this.counting = true;
  }

  /** Resolves once no frame has arrived for `quietMs`, or after `maxMs`. */
  async settle(quietMs: number, maxMs: number): Promise<void> {
    const deadline = Date.now() + maxMs;
    let frames = -1;
    while (frames !== this.frames && Date.now() < deadline) {
      frames = this.frames;
      await new Promise((resolve) => setTimeout(resolve, quietMs));
    }
  }

  reading(): FanoutReading {
    const events = this.firstReadMs.size;
    const lost = this.seenBy.reduce((sum, seen) => sum + (events - seen.size), 0);
    const total = this.spreads.reduce((sum, count) => sum + count, 0);
    let p99SpreadMs = Number.NaN;
    for (let ms = 0, seen = 0; ms < SPREAD_BUCKETS; ms++) {
      seen += this.spreads[ms];
      if (seen >= 0.99 * total) {
        p99SpreadMs = ms;
        break;
      }
    }
    const spanMs = this.lastMs - this.firstMs;
    return { deliveredPerSecond: spanMs > 0 ? (this.frames * 1000) / spanMs : Number.NaN, frames: this.frames, events, lost, p99SpreadMs };
  }

  close(): void {
    for (const request of this.requests) request.destroy();
  }

  private subscribe(url: string, index: number): Promise<void> {
    const seen = new Set<string>();
    this.seenBy.push(seen);
    const parser = createParser({
      onEvent: (message) => {
        if (!this.counting || this.isOwnFrame(message.event, message.data)) return;
        // An event's identity: its SSE id, or the head of its data (opencode's ids are inside it).
        this.take(seen, message.id ?? `${message.event ?? ''}:${message.data.slice(0, 64)}`);
      },
    });
    return new Promise((resolve, reject) => {
      const request = httpRequest(url, { headers: { accept: 'text/event-stream' }, agent: false }, (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`subscriber ${index}: HTTP ${response.statusCode} from ${url}`));
        }
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => parser.feed(chunk));
        response.on('error', () => {});
        resolve();
      });
      request.on('error', (error) => (this.counting ? undefined : reject(new Error(`subscriber ${index + 1}: ${error.message}`))));
      request.end();
      this.requests.push(request);
    });
  }

  private take(seen: Set<string>, key: string): void {
    const now = performance.now();
    this.frames += 1;
    this.firstMs = Math.min(this.firstMs, now);
    this.lastMs = now;
    seen.add(key);
    const first = this.firstReadMs.get(key);
    if (first === undefined) this.firstReadMs.set(key, now);
    this.spreads[Math.min(SPREAD_BUCKETS - 1, Math.round(now - (first ?? now)))] += 1;
  }
}
