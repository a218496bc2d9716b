import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';

/**
 * A fetch for the protocols' calls to agentd's own API (caller-client.ts) that dispatches them
 * inside the process with Fastify's inject: the same routes, hooks, access checks and error
 * envelopes as over the socket, without a loopback HTTP round trip, whose client (undici) and
 * server halves the server paid both (docs/BENCHMARKS.md, "Turns through ACP and MCP"). The SSE
 * of GET /v1/events comes back as a stream (inject's payloadAsStream): its frames are read as the
 * route writes them, and aborting the call closes the route's response as a dropped socket would.
 */
export function inProcessFetch(app: FastifyInstance): typeof fetch {
  return async (input, init) => {
    if (typeof input !== 'string') return fetch(input, init);
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const streaming = headers.accept === 'text/event-stream';
    const url = new URL(input);
    const answer = await app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: `${url.pathname}${url.search}`,
      headers: { ...headers, host: url.host },
      ...(typeof init?.body === 'string' ? { payload: init.body } : {}),
      ...(streaming ? { payloadAsStream: true, ...(init?.signal ? { signal: init.signal } : {}) } : {}),
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [String(value)]) responseHeaders.append(name, one);
    }
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    const body = empty ? null : streaming ? (Readable.toWeb(answer.stream()) as ReadableStream<Uint8Array>) : answer.body;
    return new Response(body, { status: answer.statusCode, headers: responseHeaders });
  };
}
