/**
 * Turns whatever a provider call threw into a ProviderError, the one failure shape the runtime
 * retries from. Shared by every adapter: each adapter names its SDK's error classes in the context,
 * and every SDK throws the same kinds of errors (HTTP errors with a status, errors found inside a
 * 200 stream with no status, and connection errors), only the body layouts differ.
 *
 * Messages name the provider and the status and never contain an API key.
 */
import { type HeaderSource, retryAfterMsFromHeaders } from './retry-hints.ts';
import type { RateLimitHeaders } from './dialect-descriptor.ts';
import { ProviderError } from './types.ts';

/** The error classes of the SDK an adapter reads its failures with (openai, @anthropic-ai/sdk). */
interface SdkErrorClasses {
  APIError: abstract new (...args: never[]) => Error & { status?: number | undefined; error?: unknown; headers?: unknown };
  APIConnectionError: abstract new (...args: never[]) => Error;
}

export interface ProviderErrorContext {
  provider: string;
  /** the adapter's SDK: its errors are read as HTTP, stream and connection failures */
  sdk?: SdkErrorClasses;
  /** the rate-limit headers of the adapter's provider, for a retry's wait (retry-hints.ts) */
  rateLimits?: RateLimitHeaders;
  /** the key used for the call, scrubbed from messages wherever the provider echoed it */
  apiKey?: string | null;
}

/** Billing and spend-cap failures: retrying cannot help until a human acts. */
const PERMANENT_CODES = new Set(['insufficient_quota', 'billing_error', 'enforced_spend_limit_reached']);

/** Codes (or error types) that mean "try again later" when they arrive inside a stream. */
const RETRYABLE_CODES = new Set([
  'rate_limit_exceeded',
  'rate_limit_error',
  'rate_limited',
  'overloaded_error',
  'overloaded',
  'server_overloaded',
  'server_is_overloaded',
  'slow_down',
  'server_error',
  'internal_server_error',
  'internal_error',
  'api_error',
  'service_unavailable',
  'service_unavailable_error',
  'timeout_error',
  'timeout',
]);

const CONNECTION_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const MAX_MESSAGE_LENGTH = 1000;

/** 408, 409, 429, 5xx (which includes Anthropic's 529 overload). */
function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function isPermanentErrorCode(code: string | null | undefined): boolean {
  return code != null && PERMANENT_CODES.has(code);
}

function isRetryableErrorCode(code: string | null | undefined): boolean {
  return code != null && RETRYABLE_CODES.has(code);
}

/** The SDKs and fetch signal cancellation with an error named AbortError (or APIUserAbortError). */
export function isAbortError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const name = (error as { name?: unknown }).name;
  const constructorName = (error as object).constructor?.name;
  return name === 'AbortError' || constructorName === 'APIUserAbortError';
}

/** Any thrown value to a ProviderError. Callers rethrow aborts themselves (see isAbortError). */
export function toProviderError(error: unknown, context: ProviderErrorContext): ProviderError {
  if (error instanceof ProviderError) return error;
  if (context.sdk && error instanceof context.sdk.APIConnectionError) {
    // The SDK's own message is only "Connection error."; the cause says what failed (a refused
    // connection, a certificate the system does not trust).
    return connectionError(context, describeCause(error), error.constructor.name === 'APIConnectionTimeoutError');
  }
  if (context.sdk && error instanceof context.sdk.APIError) {
    const headers = (error.headers ?? null) as HeaderSource;
    if (typeof error.status === 'number') return providerErrorFromHttp(context, error.status, error.error, headers);
    // A status-less APIError is an error event the SDK found inside a 200 stream.
    return providerErrorFromStreamPayload(context, error.error ?? { message: error.message });
  }
  if (isConnectionFailure(error)) return connectionError(context, describeCause(error), false);
  if (error instanceof SyntaxError) {
    return new ProviderError(context.provider, null, 'malformed_stream', scrub(`${context.provider} sent malformed stream data`, context), false, null);
  }
  const detail = error instanceof Error ? error.message : String(error);
  return new ProviderError(context.provider, null, 'unexpected_error', scrub(`${context.provider} call failed: ${detail}`, context), false, null);
}

/** A non-2xx HTTP answer: its status, its JSON body (raw or already parsed) and its headers. */
export function providerErrorFromHttp(
  context: ProviderErrorContext,
  status: number,
  body: unknown,
  headers: HeaderSource,
): ProviderError {
  const described = describeErrorBody(body);
  const permanent = described.permanent;
  const shouldRetryHeader = readHeader(headers, 'x-should-retry');
  let retryable = isRetryableStatus(status);
  if (shouldRetryHeader === 'true') retryable = true;
  if (shouldRetryHeader === 'false') retryable = false;
  if (permanent) retryable = false;
  const code = described.code ?? `http_${status}`;
  const detail = described.message ?? 'no error message';
  const message = `${context.provider} returned HTTP ${status} (${code}): ${detail}`;
  return new ProviderError(context.provider, status, code, scrub(message, context), retryable, retryAfterMsFromHeaders(headers, Date.now(), context.rateLimits ?? null));
}

/**
 * An error reported inside a stream that began with HTTP 200: OpenAI's `error` event (nested
 * `{error:{code,…}}` or flat `{code,message}`), `response.failed`'s `response.error`, Anthropic's
 * `event: error`, Groq's `event: error`. Retryable only for rate limits and overload.
 */
export function providerErrorFromStreamPayload(context: ProviderErrorContext, payload: unknown): ProviderError {
  const described = describeErrorBody(payload);
  const code = described.code ?? 'stream_error';
  const retryable =
    !described.permanent &&
    (isRetryableErrorCode(described.code) ||
      isRetryableErrorCode(described.type) ||
      (described.statusHint !== null && isRetryableStatus(described.statusHint)));
  const detail = described.message ?? 'no error message';
  const message = `${context.provider} reported a stream error (${code}): ${detail}`;
  return new ProviderError(context.provider, null, code, scrub(message, context), retryable, null);
}

/** The stream closed cleanly but without its terminal event: the connection was cut. */
export function streamEndedEarlyError(provider: string): ProviderError {
  return new ProviderError(provider, null, 'stream_ended_early', `${provider} stream ended early, before its final event`, true, null);
}

/** Replaces the caller's key and anything shaped like a provider key or bearer token. */
export function redactSecrets(text: string, apiKey?: string | null): string {
  let result = text;
  if (apiKey && apiKey.length >= 6) result = result.split(apiKey).join('[redacted]');
  return result
    .replace(/\b(?:sk|rk|pk)-[A-Za-z0-9_*.-]{6,}/g, '[redacted]')
    .replace(/\b(?:gsk|xai|hf)[_-][A-Za-z0-9_*.-]{10,}/g, '[redacted]')
    .replace(/\bBearer\s+[^\s"',]+/gi, 'Bearer [redacted]');
}

interface DescribedErrorBody {
  code: string | null;
  type: string | null;
  message: string | null;
  permanent: boolean;
  /** an HTTP-like status some providers put inside the payload (Groq's status_code) */
  statusHint: number | null;
}

function describeErrorBody(body: unknown): DescribedErrorBody {
  const parsed = typeof body === 'string' ? tryParseJson(body) ?? { message: body } : body;
  const outer = isRecord(parsed) ? parsed : {};
  const inner = isRecord(outer.error) ? outer.error : outer;
  const details = isRecord(inner.details) ? inner.details : {};
  const detailCode = stringOrNull(details.error_code) ?? stringOrNull(inner.error_code);
  const rawCode = inner.code;
  const textCode = typeof rawCode === 'string' && rawCode !== '' ? rawCode : null;
  const type = stringOrNull(inner.type);
  const numericCode = typeof rawCode === 'number' ? rawCode : null;
  const code = detailCode ?? textCode ?? (type !== 'error' ? type : null) ?? (numericCode !== null ? String(numericCode) : null);
  const permanent = [detailCode, textCode, type].some((candidate) => isPermanentErrorCode(candidate));
  const statusHint = typeof inner.status_code === 'number' ? inner.status_code : numericCode;
  return { code, type, message: stringOrNull(inner.message) ?? stringOrNull(outer.message), permanent, statusHint };
}

function connectionError(context: ProviderErrorContext, detail: string, timedOut: boolean): ProviderError {
  const code = timedOut ? 'timeout' : 'connection_error';
  const message = `${context.provider} connection failed (${code}): ${detail}`;
  return new ProviderError(context.provider, null, code, scrub(message, context), true, null);
}

/** undici reports a dropped socket as `TypeError: terminated` with the socket error as its cause. */
function isConnectionFailure(error: unknown): boolean {
  for (let current = error, depth = 0; isRecord(current) && depth < 5; current = current.cause, depth++) {
    if (typeof current.code === 'string' && CONNECTION_ERROR_CODES.has(current.code)) return true;
    if (current instanceof TypeError && (current.message === 'terminated' || current.message === 'fetch failed')) return true;
  }
  return false;
}

function describeCause(error: unknown): string {
  const parts: string[] = [];
  for (let current = error, depth = 0; isRecord(current) && depth < 5; current = current.cause, depth++) {
    if (typeof current.message === 'string' && current.message !== '') parts.push(current.message);
  }
  return parts.join(': ') || 'connection lost';
}

function scrub(message: string, context: ProviderErrorContext): string {
  const clean = redactSecrets(message, context.apiKey);
  return clean.length > MAX_MESSAGE_LENGTH ? `${clean.slice(0, MAX_MESSAGE_LENGTH)}…` : clean;
}

function readHeader(headers: HeaderSource, name: string): string | null {
  if (!headers) return null;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value != null) return Array.isArray(value) ? value.join(', ') : String(value);
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** The JSON value of `text`, or undefined when it is not JSON. */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
