import { ApiError, type ErrorCode } from '../domain/errors.ts';
import { normalizeUuid } from '../domain/ids.ts';
import type { SessionCursor, ArchiveFilter } from '../store/sessions.ts';

type Query = Record<string, string | string[] | undefined>;

/** One value per parameter: a repeated parameter is as invalid as a malformed one. */
function single(query: Query, name: string, code: ErrorCode): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw new ApiError(code, `${name} must be given once`);
  return value;
}

export function parseLimit(query: Query): number {
  const raw = single(query, 'limit', 'invalid_limit');
  if (raw === undefined) return 50;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 100) throw new ApiError('invalid_limit', 'limit must be an integer from 1 to 100');
  return Number(raw);
}

export function parseArchiveFilter(query: Query): ArchiveFilter {
  const raw = single(query, 'archive', 'invalid_archive_filter') ?? 'active';
  if (raw !== 'active' && raw !== 'archived' && raw !== 'all') throw new ApiError('invalid_archive_filter', 'archive must be active, archived or all');
  return raw;
}

export function encodeSessionCursor(cursor: SessionCursor): string {
  return Buffer.from(JSON.stringify([cursor.updatedAt, cursor.id])).toString('base64url');
}

export function parseSessionCursor(query: Query): SessionCursor | null {
  const raw = single(query, 'cursor', 'invalid_cursor');
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

/** A history cursor: an integer >= 0, "turns with an index below this". */
export function parseIndexCursor(query: Query): number | null {
  const raw = single(query, 'cursor', 'invalid_cursor');
  if (raw === undefined) return null;
  if (!/^\d{1,15}$/.test(raw)) throw new ApiError('invalid_cursor', 'cursor must be an integer >= 0');
  return Number(raw);
}

export function parseOptionalUuid(query: Query, name: string): string | null {
  const raw = single(query, name, 'invalid_query');
  if (raw === undefined) return null;
  const uuid = normalizeUuid(raw);
  if (uuid === null) throw new ApiError('invalid_query', `${name} must be a UUID`);
  return uuid;
}
