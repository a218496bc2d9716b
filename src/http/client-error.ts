import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import { requestId } from './request-id.ts';

// node:http as CommonJS: its ES facade would load undici at start-up (serve-memory.test.ts)
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/**
 * What a request Node's HTTP parser refused before Fastify saw it is answered with: no headers
 * were read, so no access check can run, and nothing of the service was reached.
 */
export function clientErrorToApiError(error: NodeJS.ErrnoException): ApiError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('request_header_fields_too_large', 'the request line and headers are too large');
    case 'HPE_INVALID_METHOD':
      return new ApiError('route_not_found', 'no route for this method');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'the request did not arrive in time');
    default:
      return new ApiError('malformed_request', 'the request is not valid HTTP/1.1');
  }
}

/** The server's `clientError` listener: the error envelope and X-Request-ID on the raw socket, then close. */
export function answerClientError(log: FastifyBaseLogger) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const id = requestId();
    const apiError = clientErrorToApiError(error);
    log.debug({ code: error.code, status: apiError.status, requestId: id }, 'unparsable request');
    // A response already under way on this socket cannot be followed by a second one.
    if (socket.writable && !(socket as Socket & { _httpMessage?: unknown })._httpMessage) {
      const body = JSON.stringify({ error: { code: apiError.code, message: apiError.message, requestId: id } });
      socket.write(
        `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\n` +
          `x-request-id: ${id}\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\n` +
          `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroySoon();
  };
}
