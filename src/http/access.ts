import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { Tenant, TenantRegistry } from '../config/tenant-registry.ts';
import { tenantForToken } from '../tenancy/token-lookup.ts';

export interface AccessPolicy {
  corsOrigins: ReadonlySet<string>;
  /** the single-user token; null with a registry, or in loopback mode without authentication */
  token: Buffer | null;
  /** multi-tenant mode: the bearer token selects one of these tenants */
  tenants?: TenantRegistry | null;
  /** the port actually listened on, known after listen */
  port: () => number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** multi-tenant mode: the tenant the request's bearer token belongs to, chosen per request */
    tenant: Tenant | null;
  }
}

export const CORS_HEADERS = {
  'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, Last-Event-ID',
  'access-control-max-age': '600',
  // Beyond CONTRACT.md §1: a browser script may read only the safelisted response headers unless
  // told otherwise, and a client needs the request id to report a failure and Retry-After to wait.
  'access-control-expose-headers': 'X-Request-ID, Retry-After',
};

const BEARER = 'Bearer ';

/**
 * Runs before routing on every path (CONTRACT.md §1): Origin, then Host (loopback without a token),
 * then CORS preflight, then the bearer token — with a registry, the token also names the request's
 * tenant. Returns true when the request was answered here.
 */
export function checkAccess(policy: AccessPolicy, request: FastifyRequest, reply: FastifyReply): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (!policy.corsOrigins.has(origin)) throw new ApiError('origin_not_allowed', 'this browser origin is not allowed');
    reply.header('access-control-allow-origin', origin).header('vary', 'Origin').headers(CORS_HEADERS);
  }
  const registry = policy.tenants ?? null;
  if (policy.token === null && registry === null) {
    const host = request.headers.host?.toLowerCase();
    const port = policy.port();
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}` && host !== `[::1]:${port}`) {
      throw new ApiError('invalid_host', 'the Host header does not name this loopback server');
    }
  }
  if (request.method === 'OPTIONS' && origin !== undefined) {
    reply.code(204).send();
    // Stryker disable next-line BooleanLiteral: with `false` the hook calls done() after the reply was sent, and Fastify 5 routes no request whose reply is sent (test/edges/access-checks.test.ts counts the route's calls)
    return true;
  }
  if (registry !== null) {
    request.tenant = tenantOf(request.headers.authorization, registry);
    if (request.tenant === null) throw unauthorized();
  } else if (policy.token !== null && !bearerMatches(request.headers.authorization, policy.token)) {
    throw unauthorized();
  }
  return false;
}

function unauthorized(): ApiError {
  return new ApiError('unauthorized', 'missing or invalid bearer token');
}

/** Every credential is compared on every request (registry.ts); nothing is remembered per connection. */
function tenantOf(header: string | undefined, registry: TenantRegistry): Tenant | null {
  if (header === undefined || !header.startsWith(BEARER)) return null;
  return tenantForToken(registry, header.slice(BEARER.length));
}

function bearerMatches(header: string | undefined, token: Buffer): boolean {
  if (header === undefined || !header.startsWith(BEARER)) return false;
  const presented = Buffer.from(header.slice(BEARER.length));
  // Compare in constant time; a length mismatch still costs one comparison of equal length.
  const comparable = presented.length === token.length ? presented : token;
  return timingSafeEqual(comparable, token) && presented.length === token.length;
}
