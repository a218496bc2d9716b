import Fastify, { LogController, type preParsingHookHandler, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ApiError } from '../domain/errors.ts';
import { requestId } from './request-id.ts';
import { requestLoggerFactory } from './request-logger.ts';
import { andThen, type NowOrLater } from './now-or-later.ts';
import type { Operation } from '../api/operations.ts';
import { checkAccess, type AccessPolicy } from './access.ts';
import { sendError, toApiError, type ParameterErrors } from './error-reply.ts';
import { decimalParameterDecoder } from './query.ts';
import type { Handlers } from './handlers.ts';
import { answerClientError } from './client-error.ts';
import { HTTP_TIMEOUTS } from './timeouts.ts';
import { PARSER_HEAD_BYTES, checkRequestHead, literalizeUndecodablePath } from './request-limits.ts';
import { instrumentHttp } from '../telemetry/http-telemetry.ts';
import { NO_METRICS, type MetricsRecorder } from '../telemetry/recorder.ts';
import { NO_TRACING, type Tracing } from '../telemetry/tracing.ts';
import { validatorsOnFirstUse } from './validators-on-first-use.ts';
import { PRECOMPILED_VALIDATORS } from './precompiled-validators.ts';
import type AjvCompiler from '@fastify/ajv-compiler';
import { logRequestLines, noteFailure } from './request-line.ts';

export interface AppOptions {
  logger: Logger;
  access: AccessPolicy;
  maximumRequestBytes: number;
  handlers: Handlers;
  operations: Operation[];
  /** true once the server has begun to stop: new requests get 503 server_stopping */
  isStopping: () => boolean;
  /** HTTP request counts and durations by route (default: off) */
  metrics?: MetricsRecorder;
  /** a span per request (default: off) */
  tracing?: Tracing;
  /** a `request` line at info for every request; otherwise only for statuses of 400 and above, the rest at debug (request-line.ts) */
  logEveryRequest?: boolean;
  /** how route schemas become validators; the build's generator passes its own (scripts/emit-validators.mjs) */
  buildValidator?: AjvCompiler.BuildCompilerFromPool;
}

/** Ajv's options for the route schemas: nothing is removed, coerced or filled in, and the first error is enough. */
// `x-agentd-extension` marks a body field beyond SPEC.md in /openapi.json; Ajv's strict mode knows it as an annotation
const AJV_OPTIONS = { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, keywords: ['x-agentd-extension'] as string[] } } as const;

declare module 'fastify' {
  interface FastifyContextConfig {
    hasJsonBody?: boolean;
    parameterErrors?: ParameterErrors;
  }
}

/** The Fastify application: access checks, body rules, the error envelope and one route per operation. */
export function buildApp(options: AppOptions): FastifyInstance {
  const validators = validatorsOnFirstUse(PRECOMPILED_VALIDATORS);
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: requestLoggerFactory,
    bodyLimit: options.maximumRequestBytes,
    genReqId: requestId,
    requestIdHeader: false,
    // A missing Host is our 403 invalid_host, not Node's bare 400. Over-long URLs and headers are
    // parsed so the access checks see them, then refused by checkRequestHead (request-limits.ts).
    http: { requireHostHeader: false, maxHeaderSize: PARSER_HEAD_BYTES, headersTimeout: HTTP_TIMEOUTS.headersMs, connectionsCheckingInterval: HTTP_TIMEOUTS.checkIntervalMs },
    requestTimeout: HTTP_TIMEOUTS.requestMs,
    keepAliveTimeout: HTTP_TIMEOUTS.keepAliveMs,
    routerOptions: { maxParamLength: PARSER_HEAD_BYTES },
    rewriteUrl: (request) => literalizeUndecodablePath(request.url ?? '/'),
    clientErrorHandler: answerClientError(options.logger as FastifyBaseLogger),
    // Stopping is answered by our own hook, in the envelope, after the access checks.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    ajv: AJV_OPTIONS,
    schemaController: { compilersFactory: { buildValidator: options.buildValidator ?? validators.buildValidator } },
  });
  app.addHook('onReady', (done) => {
    options.logger.debug({ precompiled: validators.precompiled, compiledOnFirstUse: validators.uncompiled }, 'route validators');
    done();
  });
  // Once listening, so that neither start-up nor a client's first request compiles the schemas.
  app.addHook('onListen', (done) => {
    setImmediate(() => void validators.prepare());
    done();
  });

  // First, so that requests the access checks refuse are counted and traced too.
  instrumentHttp(app, options.metrics ?? NO_METRICS, options.tracing ?? NO_TRACING);
  app.decorateRequest('tenant', null);

  // Hooks take callbacks rather than being async: they run on every request, and a promise each is
  // measurable there.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    let answered: boolean;
    try {
      answered = checkAccess(options.access, request, reply);
      // Every line this request logs names its tenant (never its token).
      if (request.tenant) request.log = request.log.child({ tenant: request.tenant.id });
      if (!answered) checkRequestHead(request);
      if (!answered && options.isStopping()) throw new ApiError('server_stopping', 'the server is stopping');
    } catch (error) {
      return done(error as Error);
    }
    // A preflight was answered here; calling done() as well would route it a second time.
    if (!answered) done();
  });

  // A response that began before the server started stopping must not leave its connection open
  // and idle: that would hold the process until the keep-alive timeout.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (options.isStopping()) reply.header('connection', 'close');
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

  logRequestLines(app, options.logger, options.logEveryRequest ?? false);

  app.setErrorHandler((error, request, reply) => {
    // Fastify asks an unmatched QUERY (a method with a body) for a Content-Type before our 404.
    const apiError = request.is404 && !(error instanceof ApiError) ? notFound(request) : toApiError(error, request.routeOptions.config.parameterErrors);
    noteFailure(request, apiError, error);
    // a bug: the one case where the stack is what someone needs
    if (apiError.code === 'internal_error') request.log.error({ err: error }, 'request failed');
    sendError(reply, apiError, request.id);
  });
  app.setNotFoundHandler((request, reply) => {
    const apiError = notFound(request);
    noteFailure(request, apiError, apiError);
    sendError(reply, apiError, request.id);
  });

  for (const operation of options.operations) registerOperation(app, operation, options.handlers);
  return app;
}

function notFound(request: FastifyRequest): ApiError {
  return new ApiError('route_not_found', `no route for ${request.method} ${request.originalUrl.split('?')[0]}`);
}

/**
 * A route that takes a JSON body answers 415 before the body is read, so the order is 415 → 413
 * (while reading) → 400 (parse, schema). A route hook, not a global one: the routes without a body
 * (most of the traffic) do not pay for it.
 */
const requireJsonMediaType: preParsingHookHandler = (request, _reply, payload, done) => {
  const mediaType = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
  if (mediaType !== 'application/json') return done(new ApiError('unsupported_media_type', 'Content-Type must be application/json'));
  done(null, payload);
};

function registerOperation(app: FastifyInstance, operation: Operation, handlers: Handlers): void {
  const handler = handlers[operation.operationId as keyof Handlers] as (request: FastifyRequest, reply: FastifyReply) => NowOrLater<unknown>;
  if (!handler) throw new Error(`no handler for ${operation.operationId}`);
  const decodeParameters = decimalParameterDecoder(operation.query, operation.headers);
  app.route({
    method: operation.method,
    url: operation.url,
    config: { hasJsonBody: operation.body !== undefined, parameterErrors: { querystring: operation.query?.errors, headers: operation.headers?.errors } },
    // Responses are built field by field from our own records, so they need no serializer schema:
    // JSON.stringify is within 1 µs of a compiled serializer here, and compiling 17 of them cost
    // 45 ms of every start-up (docs/BENCHMARKS.md).
    schema: {
      ...(operation.body ? { body: operation.body } : {}),
      ...(operation.query ? { querystring: operation.query.schema } : {}),
      ...(operation.headers ? { headers: operation.headers.schema } : {}),
    },
    ...(operation.body !== undefined ? { preParsing: requireJsonMediaType } : {}),
    ...(decodeParameters ? { preValidation: (request: FastifyRequest, _reply: FastifyReply, done: () => void) => { decodeParameters(request); done(); } } : {}),
    // Synchronous when the handler answered at once (a cached read): Fastify sends a plain value
    // without waiting for a promise. Nothing is returned for a reply the handler sent itself.
    handler: (request, reply) =>
      andThen(handler(request, reply), (result) => {
        if (reply.sent) return undefined;
        reply.code(operation.success.status);
        return operation.success.status === 204 ? reply.send() : result;
      }),
  });
}
