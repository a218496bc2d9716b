/**
 * Requests to providers over node:http and node:https with keep-alive agents, one pool per scheme
 * shared by every connection of the process, answered with node's own response.
 *
 * Node's fetch (undici's, which follows the whole Fetch standard) spent about 0.3 ms more CPU per
 * streamed model request than a fetch over node:http (docs/BENCHMARKS.md, "Fourth pass: the
 * provider transport"), and that fetch's web Response and stream about 0.15 ms more than node's
 * response read as it is ("Fifth pass"). Left out on purpose: redirects are answered as they come
 * (provider APIs do not redirect, and a 3xx is an error), and no `accept-encoding` is sent (so
 * nothing arrives compressed).
 */
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';

// node:http as CommonJS: its ES facade would load undici at start-up (serve-memory.test.ts)
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule('node:http');

const httpAgent = new HttpAgent({ keepAlive: true, scheduling: 'lifo' });
const httpsAgent = new HttpsAgent({ keepAlive: true, scheduling: 'lifo' });

export interface ProviderRequestInit {
  method: string;
  /** lower-case names; content-length is added for a body */
  headers: OutgoingHttpHeaders;
  body: Uint8Array | null;
  signal: AbortSignal | null;
}

/**
 * The response once its head has arrived. Its body is read as node's stream: an abort destroys it
 * with the signal's reason, and a connection that closes before the body ends fails it with
 * ECONNRESET (node's own 'aborted' error).
 */
export function providerRequest(url: string, init: ProviderRequestInit): Promise<IncomingMessage> {
  const { signal, body } = init;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const headers = body === null || init.headers['content-length'] !== undefined ? init.headers : { ...init.headers, 'content-length': body.byteLength };

  return new Promise((resolve, reject) => {
    const { https, options } = targetOf(url);
    const request = (https ? httpsRequest : httpRequest)({ ...options, method: init.method, headers, agent: https ? httpsAgent : httpAgent });
    let response: IncomingMessage | null = null;
    const onAbort = (): void => {
      if (response) return void response.destroy(signal!.reason);
      request.destroy();
      reject(signal!.reason);
    };
    const stopWatchingSignal = (): void => signal?.removeEventListener('abort', onAbort);
    signal?.addEventListener('abort', onAbort, { once: true });

    request.on('error', (error) => {
      stopWatchingSignal();
      reject(error);
    });
    request.once('response', (incoming) => {
      response = incoming;
      // ended, failed or left: the signal has nothing more to stop
      incoming.once('close', stopWatchingSignal);
      resolve(incoming);
    });
    request.end(body ?? undefined);
  });
}

interface Target {
  https: boolean;
  options: ReturnType<typeof urlToHttpOptions>;
}

/** A process talks to a few provider URLs: each is parsed once, not on every request. */
const targets = new Map<string, Target>();
const MAX_TARGETS = 64;

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`a provider URL must be http or https, not ${parsed.protocol}`);
    target = { https: parsed.protocol === 'https:', options: urlToHttpOptions(parsed) };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/** The response's header lines, as the Fetch API's Headers. */
export function responseHeaders(response: IncomingMessage): Headers {
  return new Headers(headerPairs(response));
}

/** The response's header lines as pairs, from which a Headers is made once. */
function headerPairs(response: IncomingMessage): [string, string][] {
  const pairs: [string, string][] = [];
  const raw = response.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) pairs.push([raw[index], raw[index + 1]]);
  return pairs;
}
