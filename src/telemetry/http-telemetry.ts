import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MetricsRecorder } from './recorder.ts';
import { spanNames, type OpenSpan, type TraceParent, type Tracing } from './tracing.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** the request's span while tracing is on */
    traceSpan: OpenSpan | null;
  }
}

/** The label of requests no route matched: one fixed value keeps the label set bounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Counts and traces every HTTP request by its route pattern (never the raw URL). Adds no hook at
 * all when both metrics and tracing are off. Call before the app's own onRequest hooks, so a request
 * that those refuse still gets its span.
 */
export function instrumentHttp(app: FastifyInstance, metrics: MetricsRecorder, tracing: Tracing): void {
  if (tracing.enabled) {
    app.decorateRequest('traceSpan', null);
    app.addHook('onRequest', (request, _reply, done) => {
      const route = routeOf(request);
      request.traceSpan = tracing.startSpan(
        spanNames.httpRequest(request.method, route),
        { 'http.request.method': request.method, 'http.route': route },
        { kind: 'server', parent: tracing.parentFromHeaders(request.headers) },
      );
      done();
    });
  }
  if (!metrics.enabled && !tracing.enabled) return;
  app.addHook('onResponse', (request, reply, done) => {
    if (metrics.enabled) metrics.httpRequestFinished(routeOf(request), reply.statusCode, reply.elapsedTime / 1000);
    const span = request.traceSpan;
    if (span) {
      span.setAttributes({ 'http.response.status_code': reply.statusCode, ...(reply.statusCode >= 500 ? { 'error.type': String(reply.statusCode) } : {}) });
      span.end();
      request.traceSpan = null;
    }
    done();
  });
}

/**
 * The parent for work a request starts and that outlives it (a turn admitted by POST …/turns): the
 * request's span, itself the child of the client's W3C traceparent when one was sent.
 */
export function requestTraceParent(request: FastifyRequest): TraceParent | undefined {
  return request.traceSpan?.asParent;
}

function routeOf(request: FastifyRequest): string {
  return request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
}
