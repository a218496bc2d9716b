import { Type, type Static, type TInteger, type TObject, type TOptional, type TSchema } from 'typebox';
import type { ErrorCode } from '../domain/errors.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './paging.ts';

/**
 * Query parameters and headers of the operations, declared once: the schema validates the request
 * (through Fastify), types the handler and becomes the parameters of /openapi.json; each parameter
 * names the contract's error answered when it fails (CONTRACT.md §2). Every parameter is optional
 * and any other one is ignored, so the objects allow additional properties.
 */

export interface ParameterError {
  code: ErrorCode;
  message: string;
}

interface Parameter<T extends TSchema = TSchema> {
  schema: T;
  error: ParameterError;
}

export interface ParameterSet<T extends TObject = TObject> {
  schema: T;
  /** the error of a parameter that fails its schema, by parameter name */
  errors: Record<string, ParameterError>;
  /**
   * query parameters that stand in for a header (browsers cannot set headers on an EventSource):
   * read only when the header is absent, and then not even validated
   */
  standsInFor?: Record<string, string>;
  /** parameters beyond SPEC.md: marked `x-agentd-extension: true` in /openapi.json (CONTRACT.md §20) */
  extensions?: string[];
}

type OptionalProperties<P extends Record<string, Parameter>> = { [K in keyof P]: TOptional<P[K]['schema']> };

function parameter<T extends TSchema>(schema: T, code: ErrorCode, message: string): Parameter<T> {
  return { schema, error: { code, message } };
}

function parameterSet<P extends Record<string, Parameter>>(declared: P, standsInFor?: Record<string, string>): ParameterSet<TObject<OptionalProperties<P>>> {
  const properties: Record<string, TSchema> = {};
  const errors: Record<string, ParameterError> = {};
  for (const [name, { schema, error }] of Object.entries(declared)) {
    properties[name] = Type.Optional(schema);
    errors[name] = error;
  }
  const schema = Type.Object(properties as OptionalProperties<P>, { additionalProperties: true });
  return standsInFor ? { schema, errors, standsInFor } : { schema, errors };
}

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
/** Integers arrive as text; http/query.ts turns plain decimal digits into numbers before validation. */
const eventId = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

const limit = parameter(
  Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: `1 to ${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}` }),
  'invalid_limit', `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`,
);
const uuidFilter = (name: string, description: string) =>
  parameter(Type.String({ format: 'uuid', pattern: UUID_PATTERN, description }), 'invalid_query', `${name} must be a UUID`);
const lastEventIdError: ParameterError = { code: 'invalid_last_event_id', message: 'Last-Event-ID must be an integer >= 0' };

export const ListSessionsQuery = parameterSet({
  archive: parameter(
    Type.Enum(['active', 'archived', 'all'], { default: 'active', description: 'active (default), archived or all' }),
    'invalid_archive_filter', 'archive must be active, archived or all',
  ),
  limit,
  cursor: parameter(Type.String({ description: 'nextCursor of the previous page (opaque)' }), 'invalid_cursor', 'cursor is not a value returned as nextCursor'),
});

export const HistoryQuery = parameterSet({
  limit,
  cursor: parameter(
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'integer >= 0: turns with an index below this' }),
    'invalid_cursor', 'cursor must be an integer >= 0',
  ),
});

export const TurnResultQuery: ParameterSet<TObject<{ wait: TOptional<TInteger> }>> = {
  ...parameterSet({
  wait: parameter(
    Type.Integer({ minimum: 0, maximum: 60, default: 0, description: 'seconds (0 to 60, default 0) to hold the request until the turn ends; then 409 turn_not_terminal as without it' }),
    'invalid_query', 'wait must be an integer number of seconds from 0 to 60',
  ),
  }),
  extensions: ['wait'],
};

export const ListTurnsQuery = parameterSet({ sessionId: uuidFilter('sessionId', 'only turns of this session (UUID)') });

export const ListRequestsQuery = parameterSet({ turnId: uuidFilter('turnId', 'only requests of this turn (UUID)') });

export const EventsQuery = parameterSet(
  {
    lastEventId: { schema: eventId('as the Last-Event-ID header, for clients that cannot set headers; ignored when the header is present'), error: lastEventIdError },
    sessionId: uuidFilter('sessionId', 'only this session\'s events (UUID); ids and replay rules are those of the whole stream'),
  },
  { lastEventId: 'last-event-id' },
);

/** Header names in lower case, as Node.js hands them over. */
export const EventsHeaders = parameterSet({
  'last-event-id': { schema: eventId('the last applied event id (integer >= 0)'), error: lastEventIdError },
});

export type ListSessionsQuery = Static<typeof ListSessionsQuery.schema>;
export type HistoryQuery = Static<typeof HistoryQuery.schema>;
export type ListTurnsQuery = Static<typeof ListTurnsQuery.schema>;
export type TurnResultQuery = Static<typeof TurnResultQuery.schema>;
export type ListRequestsQuery = Static<typeof ListRequestsQuery.schema>;
export type EventsQuery = Static<typeof EventsQuery.schema>;
export type EventsHeaders = Static<typeof EventsHeaders.schema>;

