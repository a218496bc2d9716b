import { Type, type TSchema } from 'typebox';
import * as S from './schemas.ts';
import * as P from './parameters.ts';
import { EventFrameData } from './events.ts';

/**
 * Every operation of the HTTP interface: the HTTP layer registers a handler per operationId and the
 * OpenAPI builder describes the same table, so the two cannot drift apart.
 */
export interface Operation {
  operationId: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Fastify form, e.g. /v1/sessions/:id */
  url: string;
  summary: string;
  body?: TSchema;
  query?: P.ParameterSet;
  headers?: P.ParameterSet;
  success: { status: number; schema: TSchema | null; contentType?: string; description: string };
  /** Error codes this operation can answer, for the documentation. */
  errors: number[];
  /** beyond SPEC.md: marked `x-agentd-extension: true` in /openapi.json (CONTRACT.md §20) */
  extension?: boolean;
}

const DataOf = (schema: TSchema) => Type.Object({ data: Type.Array(schema) });
const Health = Type.Object({ ok: Type.Boolean() });
const Ready = Type.Object({
  ready: Type.Boolean(),
  instance: Type.String({ description: 'the answering instance: --instance-id, else host name, pid and a random suffix' }),
  // present only while something is still starting; pending MCP servers leave `ready` true
  pending: Type.Optional(Type.Object({ mcp: Type.Optional(Type.Array(Type.String(), { description: 'MCP servers (--mcp-config names) not connected yet, or restarting' })) })),
});
const OpenApiDocument = Type.Object({}, { additionalProperties: true });

export const OPERATIONS: Operation[] = [
  { operationId: 'getHealth', method: 'GET', url: '/healthz', summary: 'The HTTP application responds', success: { status: 200, schema: Health, description: 'healthy' }, errors: [] },
  { operationId: 'getReady', method: 'GET', url: '/readyz', summary: 'The application and its database respond', success: { status: 200, schema: Ready, description: 'ready' }, errors: [503] },
  { operationId: 'getOpenApi', method: 'GET', url: '/openapi.json', summary: 'This description', success: { status: 200, schema: OpenApiDocument, description: 'OpenAPI 3.1 document' }, errors: [] },
  { operationId: 'listModels', method: 'GET', url: '/v1/models', summary: 'Models visible to the caller', success: { status: 200, schema: DataOf(S.Model), description: 'the catalog' }, errors: [] },
  {
    operationId: 'listSessions', method: 'GET', url: '/v1/sessions', summary: 'Sessions, newest activity first (keyset pagination)',
    query: P.ListSessionsQuery,
    success: { status: 200, schema: S.SessionPage, description: 'a page of sessions' }, errors: [400],
  },
  { operationId: 'createSession', method: 'POST', url: '/v1/sessions', summary: 'Create a durable session', body: S.CreateSession, success: { status: 201, schema: S.Session, description: 'the new session' }, errors: [400, 403, 413, 415, 422, 503] },
  { operationId: 'getSession', method: 'GET', url: '/v1/sessions/:id', summary: 'One session', success: { status: 200, schema: S.Session, description: 'the session' }, errors: [404] },
  { operationId: 'patchSession', method: 'PATCH', url: '/v1/sessions/:id', summary: 'Rename, archive, or change the model or effort (exactly one field)', body: S.PatchSession, success: { status: 200, schema: S.Session, description: 'the session after the change' }, errors: [400, 404, 409, 413, 415, 422] },
  { operationId: 'deleteSession', method: 'DELETE', url: '/v1/sessions/:id', summary: 'Delete an inactive session with its history', success: { status: 204, schema: null, description: 'deleted' }, errors: [404, 409] },
  {
    operationId: 'getHistory', method: 'GET', url: '/v1/sessions/:id/history', summary: 'Paginated, projected history',
    query: P.HistoryQuery,
    success: { status: 200, schema: S.HistoryPage, description: 'a page of history turns' }, errors: [400, 404],
  },
  { operationId: 'forkSession', method: 'POST', url: '/v1/sessions/:id/fork', summary: 'Fork the transcript or a durable turn boundary', body: S.ForkSession, success: { status: 201, schema: S.Session, description: 'the new child session' }, errors: [400, 403, 404, 409, 413, 415, 422] },
  { operationId: 'createTurn', method: 'POST', url: '/v1/sessions/:id/turns', summary: 'Queue a turn (idempotent per clientRequestId)', body: S.CreateTurn, success: { status: 202, schema: S.Turn, description: 'the admitted turn (also on an idempotent replay and for a turn refused by a full queue)' }, errors: [400, 404, 409, 413, 415, 422] },
  {
    operationId: 'listTurns', method: 'GET', url: '/v1/turns', summary: 'Retained turn records, newest first (at most 200)',
    query: P.ListTurnsQuery,
    success: { status: 200, schema: DataOf(S.Turn), description: 'turns' }, errors: [400],
  },
  { operationId: 'getTurn', method: 'GET', url: '/v1/turns/:id', summary: 'One turn', success: { status: 200, schema: S.Turn, description: 'the turn' }, errors: [404] },
  { operationId: 'getTurnResult', method: 'GET', url: '/v1/turns/:id/result', summary: 'A terminal turn with its output (?wait=SECONDS holds the request until it ends)', query: P.TurnResultQuery, success: { status: 200, schema: S.TurnResult, description: 'the result' }, errors: [400, 404, 409, 429] },
  { operationId: 'cancelTurn', method: 'POST', url: '/v1/turns/:id/cancel', summary: 'Cancel queued, running or waiting work', success: { status: 200, schema: S.Turn, description: 'the final record (unchanged if already terminal)' }, errors: [404] },
  {
    operationId: 'revertTurn', method: 'POST', url: '/v1/turns/:id/revert', summary: 'Restore the files a turn changed to their content before it, if none changed since (no body)', extension: true,
    success: { status: 200, schema: Type.Object({ reverted: Type.Array(Type.String(), { description: 'the paths written back or removed, relative to the session cwd' }) }), description: 'the turn\'s files are as they were before it' },
    errors: [404, 409],
  },
  { operationId: 'getTurnAgents', method: 'GET', url: '/v1/turns/:id/agents', summary: 'Projected child agents of a turn', success: { status: 200, schema: DataOf(S.Agent), description: 'agents' }, errors: [404, 409] },
  {
    operationId: 'listRequests', method: 'GET', url: '/v1/requests', summary: 'Pending human requests, newest first (at most 200)',
    query: P.ListRequestsQuery,
    success: { status: 200, schema: DataOf(S.HumanRequest), description: 'pending requests' }, errors: [400],
  },
  { operationId: 'resolveRequest', method: 'POST', url: '/v1/requests/:id/resolve', summary: 'Answer a human request with an advertised option', body: S.ResolveRequest, success: { status: 200, schema: S.HumanRequest, description: 'the resolved request' }, errors: [400, 404, 409, 413, 415, 422] },
  {
    operationId: 'streamEvents', method: 'GET', url: '/v1/events', summary: 'Server-Sent Events, replayable with Last-Event-ID',
    query: P.EventsQuery,
    headers: P.EventsHeaders,
    success: { status: 200, schema: EventFrameData, contentType: 'text/event-stream', description: 'an SSE stream; each frame data is an EventEnvelope, except replay.reset' }, errors: [400, 429],
  },
];
