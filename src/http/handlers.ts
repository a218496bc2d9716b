import type { FastifyReply, FastifyRequest } from 'fastify';
import { andThen, type NowOrLater } from './now-or-later.ts';
import { ApiError } from '../domain/errors.ts';
import type { CreateSessionBody, CreateTurnBody, ForkSessionBody, PatchSessionBody, ResolveRequestBody } from '../api/schemas.ts';
import { isTerminal } from '../domain/turn-lifecycle.ts';
import { toHistoryPageDto, toHumanRequestDto, toSessionDto, toTurnDto } from '../api/dto.ts';
import { projectAgents } from '../domain/projection.ts';
import { streamEvents, type SubscriberLimits } from './events-route.ts';
import type { BoundaryRuntime } from '../runtime/boundary-runtime.ts';
import { decodeSessionCursor, encodeSessionCursor } from './query.ts';
import type { EventsHeaders, EventsQuery, HistoryQuery, ListRequestsQuery, ListSessionsQuery, ListTurnsQuery, TurnResultQuery } from '../api/parameters.ts';
import type { TurnWaits } from './turn-waits.ts';
import { DEFAULT_PAGE_SIZE } from '../api/paging.ts';
import { normalizeUuid } from '../domain/ids.ts';
import { readHistoryPage } from '../runtime/session/history.ts';
import { forkSession } from '../runtime/session/fork.ts';
import { requestTraceParent } from '../telemetry/http-telemetry.ts';

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
type Handler = (request: RequestOf<any>, reply: FastifyReply) => NowOrLater<unknown>;

export interface HandlerContext {
  /**
   * The runtime of the boundary the request was admitted into, started on a tenant's first use;
   * it stays in use (not evicted) until the reply's response closes.
   */
  runtimeFor(request: FastifyRequest, reply: FastifyReply): NowOrLater<BoundaryRuntime>;
  ping(): Promise<void>;
  /** what is still starting, by kind (MCP servers by name); an empty list is left out of /readyz */
  pending(): { mcp?: string[] };
  /** --instance-id, named by /readyz so that a load balancer's probe says which instance answered */
  instanceId: string;
  openApiDocument: Record<string, unknown>;
  models(request: FastifyRequest): unknown[];
  subscriberLimits: SubscriberLimits;
  turnWaits: TurnWaits;
  keepAliveMs?: number;
}

/** A body already serialised (a cached read): sent as it is, as the JSON it is. */
function sendJson(reply: FastifyReply, body: string): string {
  reply.type('application/json; charset=utf-8');
  return body;
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
      // Pending MCP servers do not make the server unready: the API serves fully without their
      // tools, and a server that never comes up must not take agentd out of a load balancer.
      const pending = context.pending();
      return pending.mcp?.length ? { ready: true, instance: context.instanceId, pending } : { ready: true, instance: context.instanceId };
    },
    getOpenApi: async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(context.openApiDocument),
    listModels: async (request) => ({ data: context.models(request) }),

    listSessions: (request: RequestOf<{ query: ListSessionsQuery }>, reply) => {
      const { archive = 'active', limit = DEFAULT_PAGE_SIZE, cursor } = request.query;
      return andThen(context.runtimeFor(request, reply), ({ sessions }) => {
        // a bad cursor throws here, so it is never kept
        const body = sessions.readCache.read(`page ${archive} ${limit} ${cursor ?? ''}`, async () => {
          const page = await sessions.list({ archive, limit, after: decodeSessionCursor(cursor) });
          return JSON.stringify({ data: page.sessions.map(toSessionDto), nextCursor: page.next ? encodeSessionCursor(page.next) : null });
        });
        return andThen(body, (json) => sendJson(reply, json));
      });
    },
    createSession: async (request: RequestOf<{ body: CreateSessionBody }>, reply) => {
      const { sessions } = await context.runtimeFor(request, reply);
      return toSessionDto(await sessions.create(request.body));
    },
    getSession: (request: RequestOf, reply) =>
      andThen(context.runtimeFor(request, reply), ({ sessions }) => {
        const id = request.params.id;
        const body = sessions.readCache.read(`session ${id}`, async () => JSON.stringify(toSessionDto(await sessions.get(id))));
        return andThen(body, (json) => sendJson(reply, json));
      }),
    patchSession: async (request: RequestOf<{ body: PatchSessionBody }>, reply) => {
      const { sessions } = await context.runtimeFor(request, reply);
      return toSessionDto(await sessions.patch(request.params.id, request.body));
    },
    deleteSession: async (request: RequestOf, reply) => {
      const { sessions } = await context.runtimeFor(request, reply);
      await sessions.delete(request.params.id);
      return null;
    },
    getHistory: async (request: RequestOf<{ query: HistoryQuery }>, reply) => {
      const { limit = DEFAULT_PAGE_SIZE, cursor = null } = request.query;
      return toHistoryPageDto(await readHistoryPage(await context.runtimeFor(request, reply), request.params.id, { limit, cursor }));
    },
    forkSession: async (request: RequestOf<{ body: ForkSessionBody }>, reply) =>
      toSessionDto(await forkSession(await context.runtimeFor(request, reply), request.params.id, request.body)),
    createTurn: async (request: RequestOf<{ body: CreateTurnBody }>, reply) => {
      const { turns } = await context.runtimeFor(request, reply);
      // the request's span (a client's W3C traceparent continued) becomes the parent of the turn's
      const admission = await turns.submit(request.params.id, request.body, requestTraceParent(request));
      return { ...toTurnDto(admission.turn), delivery: admission.delivery };
    },
    listTurns: async (request: RequestOf<{ query: ListTurnsQuery }>, reply) => {
      const { turns } = await context.runtimeFor(request, reply);
      return { data: (await turns.list(uuidFilter(request.query.sessionId))).map(toTurnDto) };
    },
    getTurn: async (request: RequestOf, reply) => {
      const { turns } = await context.runtimeFor(request, reply);
      return toTurnDto(await turns.get(request.params.id));
    },
    getTurnResult: async (request: RequestOf<{ query: TurnResultQuery }>, reply) => {
      const runtime = await context.runtimeFor(request, reply);
      const { turns } = runtime;
      let turn = await turns.get(request.params.id);
      const seconds = request.query.wait ?? 0;
      if (!isTerminal(turn.status) && seconds > 0) {
        const read = async () => (turn = await turns.get(turn.id));
        await context.turnWaits.wait({ boundaryId: runtime.boundary.id, log: runtime.hub.log, sessionId: turn.sessionId, seconds, reply, read });
      }
      if (!isTerminal(turn.status)) throw new ApiError('turn_not_terminal', 'the turn has not ended yet', toTurnDto(turn));
      return { turn: toTurnDto(turn), output: turn.output && { changes: [], changesTruncated: false, ...turn.output } };
    },
    cancelTurn: async (request: RequestOf, reply) => {
      const { turns } = await context.runtimeFor(request, reply);
      return toTurnDto(await turns.cancel(request.params.id));
    },
    revertTurn: async (request: RequestOf, reply) => {
      const { turns } = await context.runtimeFor(request, reply);
      return turns.revert(request.params.id);
    },
    getTurnAgents: async (request: RequestOf, reply) => {
      const { turns } = await context.runtimeFor(request, reply);
      return { data: projectAgents(await turns.agents(request.params.id)) };
    },
    listRequests: async (request: RequestOf<{ query: ListRequestsQuery }>, reply) => {
      const { requests } = await context.runtimeFor(request, reply);
      return { data: (await requests.list(uuidFilter(request.query.turnId))).map(toHumanRequestDto) };
    },
    resolveRequest: async (request: RequestOf<{ body: ResolveRequestBody }>, reply) => {
      const { decision, value } = request.body;
      const { requests } = await context.runtimeFor(request, reply);
      return toHumanRequestDto(await requests.resolve(request.params.id, decision, value));
    },
    // A bad query or Last-Event-ID was answered 400 by the schemas, before any subscriber counted.
    // The query's lastEventId stands in for the header only when the header is absent.
    streamEvents: async (request: RequestOf<{ query: EventsQuery; headers: EventsHeaders }>, reply) => {
      const runtime = await context.runtimeFor(request, reply);
      const headers: EventsHeaders = request.headers;
      const options = { lastEventId: headers['last-event-id'] ?? request.query.lastEventId ?? null, sessionId: uuidFilter(request.query.sessionId) };
      await runtime.hub.catchUp(options.lastEventId);
      const release = context.subscriberLimits.acquire(runtime.boundary.id);
      streamEvents(reply, options, runtime.hub.log, context.subscriberLimits, release, context.keepAliveMs);
      return reply;
    },
  } satisfies Record<string, Handler>;
  return handlers;
}

export type Handlers = ReturnType<typeof createHandlers>;
