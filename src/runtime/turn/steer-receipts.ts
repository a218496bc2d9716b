/** What a steer's first answer said, so that its retries answer the same (CONTRACT.md §19). */
export interface SteerReceipt {
  turnId: string;
  inputDigest: string;
}

/** Beyond this many, the oldest steer receipts are forgotten. */
const MAX_STEER_RECEIPTS = 10_000;

/**
 * The steers a boundary accepted, by session and clientRequestId, newest last. They live as long
 * as this process (like the turns they joined, which a restart ends): a retry after a restart is
 * admitted anew, as a queued turn.
 */
export class SteerReceipts {
  private readonly receipts = new Map<string, SteerReceipt>();

  constructor(private readonly capacity = MAX_STEER_RECEIPTS) {}

  find(sessionId: string, clientRequestId: string): SteerReceipt | undefined {
    return this.receipts.get(key(sessionId, clientRequestId));
  }

  add(sessionId: string, clientRequestId: string, receipt: SteerReceipt): void {
    this.receipts.set(key(sessionId, clientRequestId), receipt);
    if (this.receipts.size > this.capacity) this.receipts.delete(this.receipts.keys().next().value!);
  }
}

function key(sessionId: string, clientRequestId: string): string {
  return `${sessionId} ${clientRequestId}`;
}
