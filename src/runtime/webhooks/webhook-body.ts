/**
 * What one webhook carries (CONTRACT.md §20): the JSON body {id, type, at, sessionId, turnId,
 * tenantId, data} and its signature, `X-Agentd-Signature: sha256=<hex HMAC-SHA256 of the body>`.
 */
import { createHmac } from 'node:crypto';

/** The events announced by webhook; any other type is never written to the outbox. */
const WEBHOOK_EVENT_TYPES = ['turn.completed', 'turn.failed', 'turn.cancelled', 'request.created'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface WebhookEvent {
  /** the receiver's key for dropping repeats: the same for every URL and every retry */
  id: string;
  type: WebhookEventType;
  at: string;
  sessionId: string;
  turnId: string;
  /** null in single-user mode */
  tenantId: string | null;
  /** the event's data, as the SSE stream carries it */
  data: unknown;
}

export const SIGNATURE_HEADER = 'X-Agentd-Signature';

/** The exact bytes sent (and signed); the key order is the contract's. */
export function webhookBody(event: WebhookEvent): string {
  const { id, type, at, sessionId, turnId, tenantId, data } = event;
  return JSON.stringify({ id, type, at, sessionId, turnId, tenantId, data });
}

export function webhookSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
