/**
 * The POST that asks a provider for a streamed answer, sent over http-transport.ts as the official
 * SDK clients would send it, without their request machinery. Per model request the SDKs built and
 * merged header objects (undici Headers, validated name by name), formatted the request for a debug
 * line nobody reads, armed their own 10-minute timeout with an AbortController and a listener, and
 * resolved through their promise wrappers: measured against the same build going through
 * `client.post`, 9–26% of agentd's CPU per turn (docs/BENCHMARKS.md, "Fifth pass").
 *
 * What a caller sees of a failure does not change: a refused request is the SDK's own error, made
 * by the SDK's `APIError.generate` from the status, body and headers exactly as its client makes it,
 * and a failed connection is the SDK's APIConnectionError (APIConnectionTimeoutError for a timeout),
 * so provider-error.ts and retry-hints.ts read failures as before. The SDKs stay for those classes
 * and for the request and event types; their clients send nothing.
 *
 * Left out on purpose: the SDKs' own retries (agentd sends with none: the step decides), their
 * timeout (the step's stall watchdog covers a slow first byte), and their `x-stainless-*`
 * telemetry headers.
 */
import type { IncomingMessage } from 'node:http';
import { providerRequest, responseHeaders } from './http-transport.ts';
import { tryParseJson } from './provider-error.ts';

/** The error classes of one SDK, as its client uses them. */
export interface SdkErrors {
  APIError: { generate(status: number | undefined, body: object | undefined, message: string | undefined, headers: Headers | undefined): Error };
  APIConnectionError: new (options: { message?: string; cause?: Error }) => Error;
  APIConnectionTimeoutError: new (options?: { message?: string }) => Error;
}

export interface StreamRequest {
  /** the connection's base URL and the dialect's path, joined as the SDKs join them */
  baseUrl: string;
  path: string;
  /** the dialect's own headers (its key, its version), names in lower case; accept, content-type and user-agent are added */
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
}

/** An accepted request's answer: its body not yet read, its headers for an error sent inside it. */
export interface StreamResponse {
  readonly headers: Headers;
  readonly body: AsyncIterable<Uint8Array> | null;
}

/**
 * The answer of an accepted request; anything else is thrown as the SDK would throw it. Sent with
 * providerRequest (node's response read as it is), or with `fetchImpl` when one is given.
 */
export async function postForStream(request: StreamRequest, errors: SdkErrors, fetchImpl?: typeof fetch): Promise<StreamResponse> {
  const { signal } = request;
  signal.throwIfAborted();
  const url = joinUrl(request.baseUrl, request.path);
  const headers = { accept: 'application/json', 'content-type': 'application/json', 'user-agent': 'agentd', ...request.headers };
  let response: Response | IncomingMessage;
  try {
    response = fetchImpl
      ? await fetchImpl(url, { method: 'POST', headers, body: request.body, signal })
      : await providerRequest(url, { method: 'POST', headers, body: Buffer.from(request.body, 'utf8'), signal });
  } catch (error) {
    signal.throwIfAborted();
    throw connectionFailure(error, errors);
  }
  if (response instanceof Response) {
    if (response.ok) return response;
    throw await refusal(response.status, response.headers, () => response.text(), errors);
  }
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return new NodeStreamResponse(response);
  throw await refusal(status, responseHeaders(response), () => textOf(response), errors);
}

/** node's response as a StreamResponse; its Headers are made only when an error needs them. */
class NodeStreamResponse implements StreamResponse {
  private madeHeaders: Headers | null = null;

  constructor(readonly body: IncomingMessage) {}

  get headers(): Headers {
    this.madeHeaders ??= responseHeaders(this.body);
    return this.madeHeaders;
  }
}

/** A refused request's error, made by the SDK from its status, body and headers as its client makes it. */
async function refusal(status: number, headers: Headers, readText: () => Promise<string>, errors: SdkErrors): Promise<Error> {
  const text = await readText().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
  const json = tryParseJson(text);
  return errors.APIError.generate(status, json as object | undefined, json ? undefined : text, headers);
}

async function textOf(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `base` + `path` with one slash between them, as the SDKs' buildURL does. */
export function joinUrl(base: string, path: string): string {
  return base.endsWith('/') && path.startsWith('/') ? base + path.slice(1) : base + path;
}

/** The SDKs' reading of a fetch that failed: a timeout by its name or message, otherwise a connection error. */
function connectionFailure(error: unknown, errors: SdkErrors): Error {
  const cause = error instanceof Error ? error : new Error(String(error));
  const described = String(cause) + ('cause' in cause ? String(cause.cause) : '');
  if (cause.name === 'AbortError' || cause.name === 'TimeoutError' || /timed? ?out/i.test(described)) return new errors.APIConnectionTimeoutError();
  return new errors.APIConnectionError({ cause });
}
