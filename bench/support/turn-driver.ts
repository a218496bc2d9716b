/**
 * Drives turns through agentd's public API with a fixed number in flight and times each one from
 * the POST until its terminal event arrives on an SSE subscription.
 */
import type { HttpClient } from './http-client.ts';
import type { SseFrame } from './sse-subscriber.ts';

export const TERMINAL_EVENTS = new Set(['turn.completed', 'turn.failed', 'turn.cancelled']);

export interface TurnEnd {
  event: string;
  /** performance.now() when the terminal frame was read */
  atMs: number;
}

/** Collects terminal turn events from a subscriber; wait() works whether the event came first or not. */
export class TurnWatcher {
  private readonly ended = new Map<string, TurnEnd>();
  private readonly waiters = new Map<string, (end: TurnEnd) => void>();
  /** the highest event id read so far (-1 before any) */
  newestId = -1;

  readonly onFrame = (frame: SseFrame): void => {
    if (frame.id !== null && frame.id > this.newestId) this.newestId = frame.id;
    if (!TERMINAL_EVENTS.has(frame.event)) return;
    const turnId = (JSON.parse(frame.data) as { turnId: string }).turnId;
    const end = { event: frame.event, atMs: performance.now() };
    const waiter = this.waiters.get(turnId);
    if (waiter) {
      this.waiters.delete(turnId);
      waiter(end);
    } else this.ended.set(turnId, end);
  };

  wait(turnId: string, timeoutMs: number): Promise<TurnEnd> {
    const end = this.ended.get(turnId);
    if (end) {
      this.ended.delete(turnId);
      return Promise.resolve(end);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(turnId);
        reject(new Error(`turn ${turnId} did not end within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(turnId, (ended) => {
        clearTimeout(timer);
        resolve(ended);
      });
    });
  }
}

export interface TurnTiming {
  marker: string;
  event: string;
  /** POST sent → terminal event read, in ms */
  wallMs: number;
}

export interface TurnRunOptions {
  client: HttpClient;
  watcher: TurnWatcher;
  inFlight: number;
  /** stop after this many turns … */
  turns: number;
  /** … or once this much time has passed, whichever comes first */
  timeLimitMs: number;
  /** a fresh session after this many turns, so model context stays the size of a real session's */
  turnsPerSession: number;
  /** makes markers unique across runs against one fake model */
  runLabel: string;
  /** called after each finished turn with the number finished so far */
  onTurn?: (finished: number) => void | Promise<void>;
}

export interface TurnRun {
  timings: TurnTiming[];
  elapsedMs: number;
}

/** Runs `turns` turns, `inFlight` at a time, each worker on its own sessions. */
export async function runTurns(options: TurnRunOptions): Promise<TurnRun> {
  const { client, watcher } = options;
  const timings: TurnTiming[] = [];
  const startedMs = performance.now();
  const deadline = startedMs + options.timeLimitMs;
  let started = 0;

  const worker = async (workerIndex: number) => {
    let sessionId: string | null = null;
    let turnsInSession = 0;
    while (started < options.turns && performance.now() < deadline) {
      const number = started++;
      if (sessionId === null || turnsInSession === options.turnsPerSession) {
        sessionId = (await client.expect(201, 'POST', '/v1/sessions', {})).id as string;
        turnsInSession = 0;
      }
      turnsInSession += 1;
      const marker = `bench-turn-${options.runLabel}-${workerIndex}-${number}`;
      const sentMs = performance.now();
      const turn = await client.expect(202, 'POST', `/v1/sessions/${sessionId}/turns`, { input: marker });
      const end = await watcher.wait(turn.id, 30_000);
      timings.push({ marker, event: end.event, wallMs: end.atMs - sentMs });
      await options.onTurn?.(timings.length);
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, (_, index) => worker(index)));
  return { timings, elapsedMs: performance.now() - startedMs };
}
