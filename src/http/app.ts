import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ApiError } from '../domain/errors.ts';
import { requestId } from './request-id.ts';
import type { Operation } from '../api/operations.ts';
import { checkAccess, type AccessPolicy } from './access.ts';
import { sendError, toApiError } from './error-reply.ts';
import type { Handlers } from './handlers.ts';

export interface AppOptions {
  logger: Logger;
  access: AccessPolicy;
  maximumRequestBytes: number;
  handlers: Handlers;
  operations: Operation[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    hasJsonBody?: boolean;
  }
}

/** The Fastify application: access checks, body rules, the error envelope and one route per operation. */
export function buildApp(options: AppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.maximumRequestBytes,
    genReqId: requestId,
    requestIdHeader: false,
    // A missing Host is our 403 invalid_host, not Node's bare 400.
    http: { requireHostHeader: false },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
  });

  // Hooks take callbacks rather than being async: they run on every request, and a promise each is
  // measurable there.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    let answered: boolean;
    try {
      answered = checkAccess(options.access, request, reply);
    } catch (error) {
      return done(error as Error);
    }
    // A preflight was answered here; calling done() as well would route it a second time.
    if (!answered) done();
  });

  // 415 before the body is read, so the order is 415 → 413 (while reading) → 400 (parse, schema).
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (!request.routeOptions.config.hasJsonBody) return done(null, payload);
    const mediaType = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
    if (mediaType !== 'application/json') {
      return done(new ApiError('unsupported_media_type', 'Content-Type must be application/json'));
    }
    done(null, payload);
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    if (!request.routeOptions.config.hasJsonBody) return done(null, undefined);
    try {
      done(null, JSON.parse((body as Buffer).toString('utf8')));
    } catch {
      done(new ApiError('invalid_json', 'the request body is not valid JSON'), undefined);
    }
  });

  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    done();
  });

  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    sendError(reply, apiError, request.id);
  });
  app.setNotFoundHandler((request, reply) => {
    sendError(reply, new ApiError('route_not_found', `no route for ${request.method} ${request.url.split('?')[0]}`), request.id);
  });

  for (const operation of options.operations) registerOperation(app, operation, options.handlers);
  return app;
}

function registerOperation(app: FastifyInstance, operation: Operation, handlers: Handlers): void {
  const handler = handlers[operation.operationId as keyof Handlers] as (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  if (!handler) throw new Error(`no handler for ${operation.operationId}`);
  app.route({
    method: operation.method,
    url: operation.url,
    config: { hasJsonBody: operation.body !== undefined },
    // Responses are built field by field from our own records, so they need no serializer schema:
    // JSON.stringify is within 1 µs of a compiled serializer here, and compiling 17 of them cost
    // 45 ms of every start-up (docs/BENCHMARKS.md).
    schema: operation.body ? { body: operation.body } : {},
    handler: async (request, reply) => {
      const result = await handler(request, reply);
      if (reply.sent) return reply;
      reply.code(operation.success.status);
      return operation.success.status === 204 ? reply.send() : result;
    },
  });
}
