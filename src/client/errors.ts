/**
 * An error answer of agentd, from its envelope `{"error":{code,message,requestId,details?}}`
 * (CONTRACT.md §1.5). An answer without an envelope (a proxy's 502 page, a body lost on the way)
 * gets code `http_error` and `hasEnvelope: false`, which is what tells a lost response apart.
 */
export class AgentdError extends Error {
  override readonly name = 'AgentdError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** the server's X-Request-ID of the failed request; null when the answer carried none */
    readonly requestId: string | null,
    readonly details?: unknown,
    /** seconds the server asked to wait (Retry-After on 429 and 503), when it said */
    readonly retryAfterSeconds: number | null = null,
    readonly hasEnvelope = true,
  ) {
    super(message);
  }

  static async fromResponse(response: Response): Promise<AgentdError> {
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
    const headerRequestId = response.headers.get('x-request-id');
    let envelope: unknown;
    try {
      envelope = JSON.parse(await response.text());
    } catch {
      envelope = undefined;
    }
    const error = (envelope as { error?: Record<string, unknown> } | undefined)?.error;
    if (error && typeof error.code === 'string' && typeof error.message === 'string') {
      const requestId = typeof error.requestId === 'string' ? error.requestId : headerRequestId;
      return new AgentdError(response.status, error.code, error.message, requestId, error.details, retryAfter);
    }
    return new AgentdError(response.status, 'http_error', `HTTP ${response.status} without an error envelope`, headerRequestId, undefined, retryAfter, false);
  }
}

function parseRetryAfter(value: string | null): number | null {
  if (value === null || !/^\d+$/.test(value.trim())) return null;
  return Number(value.trim());
}
