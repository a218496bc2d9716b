/**
 * How long a connection may take over each part of an exchange, so slow or silent clients
 * (slowloris, thousands of idle sockets) cannot hold the server's connections forever. Node checks
 * them every `checkIntervalMs`; a request that runs out of time is answered 408 request_timeout
 * (client-error.ts) and its connection closed. Responses are not timed: an SSE stream or a long
 * turn result is not a slow client.
 */
export const HTTP_TIMEOUTS = {
  /** the request line and headers, from the first byte of the connection (or of the next request) */
  headersMs: 10_000,
  /** the whole request, headers and body: room for a 32 MiB body on a slow link */
  requestMs: 60_000,
  /** an idle keep-alive connection between requests */
  keepAliveMs: 5_000,
  checkIntervalMs: 1_000,
} as const;
