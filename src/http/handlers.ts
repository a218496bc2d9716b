import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { CreateSessionBody, CreateTurnBody, ForkSessionBody, PatchSessionBody, ResolveRequestBody } from '../api/schemas.ts';
import { isTerminal } from '../domain/turn-lifecycle.ts';
import { toHistoryPageDto, toHumanRequestDto, toSessionDto, toTurnDto } from '../api/dto.ts';
import { projectAgents } from '../domain/projection.ts';
import { streamEvents, type SubscriberLimits } from './events-route.ts';
import type { BoundaryRuntime } from '../runtime/boundary-runtime.ts';
import { decodeSessionCursor, encodeSessionCursor } from './query.ts';
import type { EventsHeaders, EventsQuery, HistoryQuery, ListRequestsQuery, ListSessionsQuery, ListTurnsQuery } from '../api/parameters.ts';
import { DEFAULT_PAGE_SIZE } from '../api/paging.ts';
import { normalizeUuid } from '../domain/ids.ts';
import { readHistoryPage } from '../runtime/history.ts';
import { forkSession } from '../runtime/fork.ts';

interface RequestShape {
  body?: unknown;
  query?: unknown;
  headers?: unknown;
}

/**
 * A request as a handler sees it: Fastify has validated its body, query and headers against the
 * operation's schemas (app.ts), so their types are the schemas' own. Every path parameter is `:id`.
 */
type RequestOf<Shape extends RequestShape = RequestShape> = FastifyRequest<{ Params: { id: string }; Body: Shape['body']; Querystring: Shape['query']; Headers: Shape['headers'] }>;
// `any` only lets each handler name its own request shape.
type Handler = (request: RequestOf<any>, reply: FastifyReply) => Promise<unknown>;

export interface HandlerContext {
  /** The runtime of the boundary the request was admitted into. */
  runtimeFor(request: FastifyRequest): BoundaryRuntime;
  ping(): Promise<void>;
  openApiDocument: Record<string, unknown>;
  models(request: FastifyRequest): unknown[];
  subscriberLimits: SubscriberLimits;
  keepAliveMs?: number;
}

/** UUID filters are accepted in any case (CONTRACT.md §2); the schema has checked their shape. */
const uuidFilter = (value: string | undefined) => (value === undefined ? null : normalizeUuid(value));

export function createHandlers(context: HandlerContext) {
  const handlers = {
    getHealth: async () => ({ ok: true }),
    getReady: async () => {
      try {
        await context.ping();
      } catch {
        throw new ApiError('store_unavailable', 'the database is unavailable');
      }
      return { ready: true };
    },
    getOpenApi: async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(context.openApiDocument),
    listModels: async (request) => ({ data: context.models(request) }),

    listSessions: async (request: RequestOf<{ query: ListSessionsQuery }>) => {
      const { archive = 'active', limit = DEFAULT_PAGE_SIZE, cursor } = request.query;
      const page = await context.runtimeFor(request).sessions.list({ archive, limit, after: decodeSessionCursor(cursor) });
      return { data: page.sessions.map(toSessionDto), nextCursor: page.next ? encodeSessionCursor(page.next) : null };
    },
    createSession: async (request: RequestOf<{ body: CreateSessionBody }>) => toSessionDto(await context.runtimeFor(request).sessions.create(request.body)),
    getSession: async (request: RequestOf) => toSessionDto(await context.runtimeFor(request).sessions.get(request.params.id)),
    patchSession: async (request: RequestOf<{ body: PatchSessionBody }>) => toSessionDto(await context.runtimeFor(request).sessions.patch(request.params.id, request.body)),
    deleteSession: async (request: RequestOf) => {
      await context.runtimeFor(request).sessions.delete(request.params.id);
      return null;
    },
    getHistory: async (request: RequestOf<{ query: HistoryQuery }>) => {
      const { limit = DEFAULT_PAGE_SIZE, cursor = null } = request.query;
      return toHistoryPageDto(await readHistoryPage(context.runtimeFor(request), request.params.id, { limit, cursor }));
    },
    forkSession: async (request: RequestOf<{ body: ForkSessionBody }>) => toSessionDto(await forkSession(context.runtimeFor(request), request.params.id, request.body)),
    createTurn: async (request: RequestOf<{ body: CreateTurnBody }>) => toTurnDto(await context.runtimeFor(request).turns.submit(request.params.id, request.body)),
    listTurns: async (request: RequestOf<{ query: ListTurnsQuery }>) => ({
      data: (await context.runtimeFor(request).turns.list(uuidFilter(request.query.sessionId))).map(toTurnDto),
    }),
    getTurn: async (request: RequestOf) => toTurnDto(await context.runtimeFor(request).turns.get(request.params.id)),
    getTurnResult: async (request: RequestOf) => {
      const turn = await context.runtimeFor(request).turns.get(request.params.id);
      if (!isTerminal(turn.status)) throw new ApiError('turn_not_terminal', 'the turn has not ended yet', toTurnDto(turn));
      return { turn: toTurnDto(turn), output: turn.output };
    },
    cancelTurn: async (request: RequestOf) => toTurnDto(await context.runtimeFor(request).turns.cancel(request.params.id)),
    getTurnAgents: async (request: RequestOf) => ({ data: projectAgents(await context.runtimeFor(request).turns.agents(request.params.id)) }),
    listRequests: async (request: RequestOf<{ query: ListRequestsQuery }>) => ({
      data: context.runtimeFor(request).requests.list(uuidFilter(request.query.turnId)).map(toHumanRequestDto),
    }),
    resolveRequest: async (request: RequestOf<{ body: ResolveRequestBody }>) => {
      const { decision, value } = request.body;
      return toHumanRequestDto(context.runtimeFor(request).requests.resolve(request.params.id, decision, value));
    },
    // A bad query or Last-Event-ID was answered 400 by the schemas, before any subscriber counted.
    // The query's lastEventId stands in for the header only when the header is absent.
    streamEvents: async (request: RequestOf<{ query: EventsQuery; headers: EventsHeaders }>, reply) => {
      const runtime = context.runtimeFor(request);
      const headers: EventsHeaders = request.headers;
      const options = { lastEventId: headers['last-event-id'] ?? request.query.lastEventId ?? null, sessionId: uuidFilter(request.query.sessionId) };
      const release = context.subscriberLimits.acquire(runtime.boundary.id);
      streamEvents(reply, options, runtime.hub.log, context.subscriberLimits, release, context.keepAliveMs);
      return reply;
    },
  } satisfies Record<string, Handler>;
  return handlers;
}

export type Handlers = ReturnType<typeof createHandlers>;
