import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';

/**
 * Node's parser is given far more room than a request may use, so that an over-long URL or header
 * block still reaches the access checks (CONTRACT.md §16) and is refused after them, in the
 * envelope, by `checkRequestHead`. Only a head beyond this reaches Node's own clientError path.
 */
export const PARSER_HEAD_BYTES = 256 * 1024;
/** The request target (path and query). */
export const MAX_URL_BYTES = 8 * 1024;
/** The request line and every header line, as they arrived. */
export const MAX_HEAD_BYTES = 16 * 1024;

/** 414 `uri_too_long` or 431 `request_header_fields_too_large`; runs after the access checks. */
export function checkRequestHead(request: FastifyRequest): void {
  const raw = request.raw;
  const target = request.originalUrl;
  if (target.length > MAX_URL_BYTES) throw new ApiError('uri_too_long', `the request URL exceeds ${MAX_URL_BYTES} bytes`);
  // request line: METHOD SP target SP HTTP/x.y CRLF; each header line: name ": " value CRLF
  let size = raw.method!.length + target.length + 12;
  const headers = raw.rawHeaders;
  for (let index = 0; index < headers.length; index += 2) size += headers[index].length + headers[index + 1].length + 4;
  if (size > MAX_HEAD_BYTES) throw new ApiError('request_header_fields_too_large', `the request line and headers exceed ${MAX_HEAD_BYTES} bytes`);
}

/**
 * A path whose percent-encoding does not decode (`/v1/%ff%fe`) would stop Fastify's router with its
 * own 400 before any hook runs. Escaping its `%` signs makes the text literal instead: it then routes
 * like any other path, passes the access checks, and names no resource (404).
 */
export function literalizeUndecodablePath(url: string): string {
  const queryStart = url.indexOf('?');
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  // Stryker disable next-line ConditionalExpression, StringLiteral: a shortcut: without it, a path with no `%` decodes without error and the same url is returned; the `true` twin, killed, shares the line
  if (!path.includes('%')) return url;
  try {
    decodeURIComponent(path);
    return url;
  } catch {
    return path.replaceAll('%', '%25') + (queryStart === -1 ? '' : url.slice(queryStart));
  }
}
