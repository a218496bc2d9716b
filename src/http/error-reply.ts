import type { FastifyReply } from 'fastify';
import { ApiError, type ErrorCode } from '../domain/errors.ts';
import { isStoreUnavailable } from '../store/unavailable.ts';
import type { ParameterError } from '../api/parameters.ts';

interface FastifyLikeError {
  code?: string;
  statusCode?: number;
  validation?: { instancePath: string; message?: string; keyword: string; params?: Record<string, unknown> }[];
  validationContext?: string;
}

/** A route's errors for query parameters and headers that fail their schemas, by parameter name. */
export interface ParameterErrors {
  querystring?: Record<string, ParameterError>;
  headers?: Record<string, ParameterError>;
}

/** Maps anything thrown in a request to the contract's error, never leaking internals. */
export function toApiError(error: unknown, parameterErrors: ParameterErrors = {}): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as FastifyLikeError;
  const context = fastifyError.validationContext;
  if (fastifyError.validation && (context === 'querystring' || context === 'headers')) {
    // the first path segment is the parameter: /limit, /last-event-id
    const name = fastifyError.validation[0]?.instancePath.split('/')[1] ?? '';
    const declared = parameterErrors[context]?.[name];
    return declared ? new ApiError(declared.code, declared.message) : new ApiError('invalid_query', `the ${name} parameter is invalid`);
  }
  if (fastifyError.validation) {
    const details = fastifyError.validation.map((issue) => ({
      path: issue.keyword === 'additionalProperties' ? `${issue.instancePath}/${String(issue.params?.additionalProperty)}` : issue.instancePath || '/',
      message: issue.keyword === 'additionalProperties' ? 'unknown property' : (issue.message ?? 'invalid'),
    }));
    return new ApiError('invalid_json', `invalid request body at ${details[0]?.path ?? '/'}: ${details[0]?.message ?? 'invalid'}`, details);
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('request_too_large', 'the request body exceeds the maximum request size');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return fastifyError.statusCode === 415
        ? new ApiError('unsupported_media_type', 'Content-Type must be application/json')
        : new ApiError('invalid_json', 'the request body could not be read');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', 'the request body is not valid JSON');
  }
  if (fastifyError.statusCode === 503) return new ApiError('server_stopping', 'the server is stopping');
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new ApiError('invalid_json', 'the request could not be read');
  }
  if (isStoreUnavailable(error)) return new ApiError('store_unavailable', 'the database is unavailable');
  return new ApiError('internal_error', 'internal error');
}

/**
 * Seconds a client should wait before retrying each 429 and 503 (CONTRACT.md §16): long enough for
 * the condition to change, short enough not to strand a client that polls.
 */
export const RETRY_AFTER_SECONDS: Partial<Record<ErrorCode, number>> = {
  event_subscriber_limit: 5,
  tenant_event_subscriber_limit: 5,
  too_many_waits: 5,
  store_unavailable: 5,
  tenant_runtime_unavailable: 5,
  // a restarted server is listening again within seconds
  server_stopping: 10,
  // models are configured by an operator, not by waiting
  model_catalog_empty: 60,
};

export function sendError(reply: FastifyReply, error: ApiError, requestId: string): void {
  const body: { error: Record<string, unknown> } = { error: { code: error.code, message: error.message, requestId } };
  if (error.details !== undefined) body.error.details = error.details;
  const retryAfter = RETRY_AFTER_SECONDS[error.code];
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  reply.code(error.status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}
