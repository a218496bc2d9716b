/** What an event log holds and hands out (CONTRACT.md §6): the record, its sink and the subscription. */

export interface EventRecord {
  id: number;
  type: string;
  turnId: string | null;
  sessionId: string | null;
  at: string;
  data: unknown;
}

export interface EventFields {
  turnId?: string | null;
  sessionId?: string | null;
  data?: unknown;
}

/** Where a subscriber's frames go: for HTTP, the response stream. */
export interface EventSink {
  /**
   * Takes one frame. Returns false when the consumer is saturated: the frame is still taken, but
   * no more are written until the sink calls the function it was given through onDrain.
   */
  write(frame: string): boolean;
  /**
   * Called after write returned false, once per saturation; the sink calls `resume` (later, not
   * from inside onDrain) when it drains, e.g. `res.once('drain', resume)`.
   */
  onDrain(resume: () => void): void;
}

export interface Subscription {
  /** Stops delivery and releases everything the log held for this subscriber. Idempotent. */
  close(): void;
  /** Frames waiting for the consumer to drain. */
  readonly queuedFrames: number;
  readonly closed: boolean;
}

export interface SubscriptionFilter {
  /** Only events of this session; replay.reset frames still go out as they would unfiltered. */
  sessionId?: string | null;
}
