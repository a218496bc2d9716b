/**
 * What the rest of the server records about itself, as one typed object whose call sites are one
 * line each. The Prometheus implementation (metrics.ts) loads only when --metrics-port is given;
 * otherwise every call lands on NO_METRICS and costs a no-op call.
 */

export type ModelRequestStatus = 'ok' | 'error' | 'cancelled';
export type ToolCallOutcome = 'ok' | 'error' | 'denied' | 'cancelled' | 'timeout';

export interface TokenCounts {
  input: number;
  output: number;
  cached: number;
}

export interface TurnQueueCounts {
  running: number;
  queued: number;
}

export interface MetricsRecorder {
  readonly enabled: boolean;
  /** `route` is the route pattern (bounded), never the raw URL. */
  httpRequestFinished(route: string, status: number, seconds: number): void;
  /** A turn reached a terminal status; `tenant` only in multi-tenant mode. */
  turnFinished(status: string, seconds: number, tenant?: string): void;
  /**
   * A turn ended by no owner (store/ownerless-ends.ts): a restart's recovery or a cluster's sweep.
   * Counted with the other ends, but its time is not observed: it was admitted by another process.
   */
  turnEndedWithoutOwner(status: string, tenant?: string): void;
  /** Read on every scrape, so the gauges never drift from the scheduler. */
  observeTurnQueue(read: () => TurnQueueCounts): void;
  /** `secondsToFirstByte` is null when the request failed before anything arrived. */
  modelRequestFinished(provider: string, status: ModelRequestStatus, secondsToFirstByte: number | null, secondsToEnd: number): void;
  tokensUsed(tokens: TokenCounts, tenant?: string): void;
  toolCallFinished(tool: string, outcome: ToolCallOutcome): void;
  humanRequestOpened(): void;
  humanRequestClosed(): void;
  /** Read on every scrape. */
  observeEventSubscribers(read: () => number): void;
  /** A subscriber was reset for being too slow to keep up. */
  eventsDropped(count?: number): void;
  /** A webhook delivery answered 2xx, `seconds` after its event was announced. */
  webhookDelivered(seconds: number): void;
  /** A webhook delivery failed and is owed again later. */
  webhookRetried(): void;
  /** A webhook delivery given up: 24 h of failures, or its URL is no longer configured. */
  webhookDropped(count?: number): void;
}

const nothing = () => {};

export const NO_METRICS: MetricsRecorder = Object.freeze({
  enabled: false,
  httpRequestFinished: nothing,
  turnFinished: nothing,
  turnEndedWithoutOwner: nothing,
  observeTurnQueue: nothing,
  modelRequestFinished: nothing,
  tokensUsed: nothing,
  toolCallFinished: nothing,
  humanRequestOpened: nothing,
  humanRequestClosed: nothing,
  observeEventSubscribers: nothing,
  eventsDropped: nothing,
  webhookDelivered: nothing,
  webhookRetried: nothing,
  webhookDropped: nothing,
});
