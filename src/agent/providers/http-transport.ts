/**
 * The provider SDKs' transport: a `fetch` over node:http and node:https with keep-alive agents.
 *
 * The official SDKs take any fetch. Node's own (undici's, which follows the whole Fetch standard)
 * spent about 0.3 ms more CPU per streamed model request than this on the benchmark machine, a
 * tenth of a turn's server time (docs/BENCHMARKS.md, "Fourth pass: the provider transport").
 * What it leaves out, on purpose: redirects are answered as they come (provider APIs do not
 * redirect, and a 3xx reaches the SDK as an error), no `accept-encoding` is sent (so nothing
 * arrives compressed), and bodies other than text and bytes (FormData, streams) and `Request`
 * inputs go to the global fetch unchanged.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

const httpAgent = new HttpAgent({ keepAlive: true, scheduling: 'lifo' });
const httpsAgent = new HttpsAgent({ keepAlive: true, scheduling: 'lifo' });
/** statuses whose Response must have a null body (the Fetch standard's "null body status") */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);
/** chunks the response stream buffers before the socket is paused for the reader to catch up */
const BUFFERED_CHUNKS = 16;

export const providerFetch: typeof fetch = (input, init) => {
  const body = init?.body;
  if (input instanceof Request || !isPlainBody(body)) return fetch(input, init);
  const url = input instanceof URL ? input : new URL(input);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fetch(input, init);
  return send(url, init ?? {}, body);
};

type PlainBody = string | ArrayBuffer | ArrayBufferView | null | undefined;

function isPlainBody(body: unknown): body is PlainBody {
  return body === undefined || body === null || typeof body === 'string' || body instanceof ArrayBuffer || ArrayBuffer.isView(body);
}

function send(url: URL, init: RequestInit, body: PlainBody): Promise<Response> {
  const signal = init.signal ?? null;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const method = (init.method ?? 'GET').toUpperCase();
  const bytes = toBytes(body);
  const headers = toNodeHeaders(init.headers);
  if (bytes !== null && headers['content-length'] === undefined) headers['content-length'] = bytes.byteLength;
  const https = url.protocol === 'https:';

  return new Promise((resolve, reject) => {
    const request = (https ? httpsRequest : httpRequest)(url, { method, headers, agent: https ? httpsAgent : httpAgent });
    let failResponseBody: ((reason: unknown) => void) | null = null;
    const onAbort = (): void => {
      request.destroy();
      if (failResponseBody) failResponseBody(signal!.reason);
      else reject(signal!.reason);
    };
    const stopWatchingSignal = (): void => signal?.removeEventListener('abort', onAbort);
    signal?.addEventListener('abort', onAbort, { once: true });

    request.on('error', (error) => {
      stopWatchingSignal();
      reject(error);
    });
    request.once('response', (response) => {
      try {
        const status = response.statusCode ?? 0;
        const nullBody = method === 'HEAD' || NULL_BODY_STATUSES.has(status);
        let stream: ReadableStream<Uint8Array> | null = null;
        if (nullBody) {
          response.resume();
          stopWatchingSignal();
        } else {
          const reader = readableOf(response, stopWatchingSignal);
          stream = reader.stream;
          failResponseBody = reader.fail;
        }
        resolve(new Response(stream, { status, statusText: response.statusMessage, headers: toFetchHeaders(response) }));
      } catch (error) {
        stopWatchingSignal();
        response.destroy();
        reject(error);
      }
    });
    request.end(bytes ?? undefined);
  });
}

/** The response body as a web stream, paused while its reader is behind. */
function readableOf(response: IncomingMessage, onSettled: () => void): { stream: ReadableStream<Uint8Array>; fail: (reason: unknown) => void } {
  let settled = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const settle = (finish: () => void): void => {
    if (settled) return;
    settled = true;
    onSettled();
    finish();
  };
  const fail = (reason: unknown): void =>
    settle(() => {
      controller.error(reason);
      response.destroy();
    });
  const stream = new ReadableStream<Uint8Array>(
    {
      start(streamController) {
        controller = streamController;
        response.on('data', (chunk: Buffer) => {
          if (settled) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 1) <= 0) response.pause();
        });
        response.once('end', () => settle(() => controller.close()));
        response.on('error', fail);
        // A socket closed before the body ended, without an error of its own, is a dropped connection.
        response.once('close', () => {
          if (!response.complete) fail(Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' }));
        });
      },
      pull() {
        response.resume();
      },
      cancel() {
        settle(() => response.destroy());
      },
    },
    { highWaterMark: BUFFERED_CHUNKS },
  );
  return { stream, fail };
}

function toBytes(body: PlainBody): Uint8Array | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

function toNodeHeaders(init: RequestInit['headers']): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  if (init === undefined) return headers;
  // A plain record (what agentd's own requests pass) is copied as it is: node:http validates the
  // names and values itself, so building a Headers object for them would only do that twice.
  if (!(init instanceof Headers) && !Array.isArray(init)) {
    for (const [name, value] of Object.entries(init)) headers[name.toLowerCase()] = String(value);
    return headers;
  }
  (init instanceof Headers ? init : new Headers(init)).forEach((value, name) => {
    headers[name] = value;
  });
  return headers;
}

/** The response's header lines as pairs: the Response makes its one Headers from them. */
function toFetchHeaders(response: IncomingMessage): [string, string][] {
  const pairs: [string, string][] = [];
  const raw = response.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) pairs.push([raw[index], raw[index + 1]]);
  return pairs;
}
