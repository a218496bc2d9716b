import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ApiError } from '../domain/errors.ts';
import { UNMATCHED_ROUTE } from '../telemetry/http-telemetry.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** the error code the request was answered with, and for an outage what the store said */
    failure: { code: string; reason?: string } | null;
  }
}

/** A store's own message is kept for the log; this bounds it. */
const MAX_REASON = 200;

/**
 * The one `request` line a request gets (docs/OPERATIONS.md, "Logs"): method, route pattern,
 * status, time, and the error code it was answered with. Its level says who should look:
 * - 500 and up at warn: the server could not serve it (no model configured, the database down,
 *   stopping); one line, no stack, because these are states of the configuration or of the
 *   machine, not bugs. A bug (`internal_error`) also gets an error line with its stack, from the
 *   error handler.
 * - 400 to 499 at info: refused, not found.
 * - the rest at debug, or at info when `logEveryRequest` (multi-tenant hosting, where the lines
 *   say which tenant asked what). A line costs about 7 µs, an eighth of a GET (BENCHMARKS.md).
 */
export function logRequestLines(app: FastifyInstance, logger: Logger, logEveryRequest: boolean): void {
  app.decorateRequest('failure', null);
  const everyRequestLevel = logEveryRequest ? 'info' : 'debug';
  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    const level = status >= 500 ? 'warn' : status >= 400 ? 'info' : everyRequestLevel;
    if (logger.isLevelEnabled(level)) {
      const line: Record<string, unknown> = { method: request.method, route: request.routeOptions.url ?? UNMATCHED_ROUTE, status, ms: Math.round(reply.elapsedTime) };
      if (request.failure) Object.assign(line, request.failure);
      request.log[level](line, 'request');
    }
    done();
  });
}

/** Remembers what the request is answered with, for its request line. */
export function noteFailure(request: FastifyRequest, answer: ApiError, thrown: unknown): void {
  request.failure = { code: answer.code };
  // the database's own words say why it is unavailable (they hold no credentials or user data)
  if (answer.code === 'store_unavailable' && thrown !== answer && thrown instanceof Error) {
    request.failure.reason = thrown.message.replace(/\s+/g, ' ').slice(0, MAX_REASON);
  }
}
