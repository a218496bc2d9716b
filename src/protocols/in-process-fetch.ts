import type { FastifyInstance } from 'fastify';

/**
 * A fetch for the protocols' calls to agentd's own API (caller-client.ts) that dispatches them
 * inside the process with Fastify's inject: the same routes, hooks, access checks and error
 * envelopes as over the socket, without a loopback HTTP round trip, whose client (undici) and
 * server halves the server paid both (docs/BENCHMARKS.md, "Turns through ACP and MCP"). A stream
 * (the SSE of GET /v1/events) still goes over HTTP: inject answers once a response has ended.
 */
export function inProcessFetch(app: FastifyInstance): typeof fetch {
  return async (input, init) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    if (typeof input !== 'string' || headers.accept === 'text/event-stream') return fetch(input, init);
    const url = new URL(input);
    const answer = await app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: `${url.pathname}${url.search}`,
      headers: { ...headers, host: url.host },
      ...(typeof init?.body === 'string' ? { payload: init.body } : {}),
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [String(value)]) responseHeaders.append(name, one);
    }
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    return new Response(empty ? null : answer.body, { status: answer.statusCode, headers: responseHeaders });
  };
}
