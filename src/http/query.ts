import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { ParameterSet } from '../api/parameters.ts';
import type { SessionCursor } from '../store/sessions.ts';

/**
 * Query strings and headers are text, while the schemas of api/parameters.ts declare integers. Only
 * plain decimal digits become a number here, before validation; anything else ("1e3", " 5", "0x10",
 * a repeated parameter) stays as it came and fails its schema. Ajv's own coercion would take all
 * of those, and it would apply to bodies too.
 */
export function decimalParameterDecoder(query: ParameterSet | undefined, headers: ParameterSet | undefined) {
  const queryIntegers = integerNames(query);
  const headerIntegers = integerNames(headers);
  const standsInFor = Object.entries(query?.standsInFor ?? {});
  if (queryIntegers.length === 0 && headerIntegers.length === 0 && standsInFor.length === 0) return null;
  return (request: FastifyRequest): void => {
    const queryValues = request.query as Record<string, unknown>;
    for (const [name, header] of standsInFor) if (request.headers[header] !== undefined) delete queryValues[name];
    decodeIntegers(queryValues, queryIntegers);
    if (headerIntegers.some((name) => request.headers[name] !== undefined)) {
      const decoded: Record<string, unknown> = { ...request.headers };
      decodeIntegers(decoded, headerIntegers);
      // Fastify's setter layers these over the raw headers, which stay as received.
      request.headers = decoded as FastifyRequest['headers'];
    }
  };
}

function integerNames(set: ParameterSet | undefined): string[] {
  const properties = (set?.schema.properties ?? {}) as Record<string, { type?: unknown }>;
  return Object.keys(properties).filter((name) => properties[name].type === 'integer');
}

function decodeIntegers(values: Record<string, unknown>, names: string[]): void {
  for (const name of names) {
    const value = values[name];
    if (typeof value === 'string' && /^\d+$/.test(value)) values[name] = Number(value);
  }
}

export function encodeSessionCursor(cursor: SessionCursor): string {
  return Buffer.from(JSON.stringify([cursor.updatedAt, cursor.id])).toString('base64url');
}

/** The opaque `cursor` of GET /v1/sessions: what encodeSessionCursor gave out, or 400 invalid_cursor. */
export function decodeSessionCursor(raw: string | undefined): SessionCursor | null {
  if (raw === undefined) return null;
  try {
    const decoded = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(decoded) && decoded.length === 2 && typeof decoded[0] === 'string' && typeof decoded[1] === 'string' && !Number.isNaN(Date.parse(decoded[0]))) {
      return { updatedAt: decoded[0], id: decoded[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw new ApiError('invalid_cursor', 'cursor is not a value returned as nextCursor');
}
