import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';

export interface AccessPolicy {
  corsOrigins: ReadonlySet<string>;
  /** null: loopback mode without authentication (the Host header is checked instead) */
  token: Buffer | null;
  /** the port actually listened on, known after listen */
  port: () => number;
}

export const CORS_HEADERS = {
  'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, Last-Event-ID',
  'access-control-max-age': '600',
};

/**
 * Runs before routing on every path (CONTRACT.md §1): Origin, then Host (loopback without a token),
 * then CORS preflight, then the bearer token. Returns true when the request was answered here.
 */
export function checkAccess(policy: AccessPolicy, request: FastifyRequest, reply: FastifyReply): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (!policy.corsOrigins.has(origin)) throw new ApiError('origin_not_allowed', 'this browser origin is not allowed');
    reply.header('access-control-allow-origin', origin).header('vary', 'Origin').headers(CORS_HEADERS);
  }
  if (policy.token === null) {
    const host = request.headers.host?.toLowerCase();
    const port = policy.port();
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}` && host !== `[::1]:${port}`) {
      throw new ApiError('invalid_host', 'the Host header does not name this loopback server');
    }
  }
  if (request.method === 'OPTIONS' && origin !== undefined) {
    reply.code(204).send();
    return true;
  }
  if (policy.token !== null && !bearerMatches(request.headers.authorization, policy.token)) {
    throw new ApiError('unauthorized', 'missing or invalid bearer token');
  }
  return false;
}

function bearerMatches(header: string | undefined, token: Buffer): boolean {
  if (header === undefined || !header.startsWith('Bearer ')) return false;
  const presented = Buffer.from(header.slice(7));
  // Compare in constant time; a length mismatch still costs one comparison of equal length.
  const comparable = presented.length === token.length ? presented : token;
  return timingSafeEqual(comparable, token) && presented.length === token.length;
}
