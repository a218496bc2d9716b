import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { CreateSessionBody, CreateTurnBody, ForkSessionBody, PatchSessionBody, ResolveRequestBody } from '../api/schemas.ts';
import { isTerminal } from '../domain/turn-lifecycle.ts';
import { toHistoryPageDto, toHumanRequestDto, toSessionDto, toTurnDto } from '../api/dto.ts';
import { projectAgents } from '../domain/projection.ts';
import { parseStreamOptions, streamEvents, type SubscriberLimits } from './events-route.ts';
import type { BoundaryRuntime } from '../runtime/boundary-runtime.ts';
import { encodeSessionCursor, parseArchiveFilter, parseIndexCursor, parseLimit, parseOptionalUuid, parseSessionCursor } from './query.ts';
import { readHistoryPage } from '../runtime/history.ts';
import { forkSession } from '../runtime/fork.ts';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
type Query = Record<string, string | string[] | undefined>;

export interface HandlerContext {
  /** The runtime of the boundary the request was admitted into. */
  runtimeFor(request: FastifyRequest): BoundaryRuntime;
  ping(): Promise<void>;
  openApiDocument: Record<string, unknown>;
  models(request: FastifyRequest): unknown[];
  subscriberLimits: SubscriberLimits;
  keepAliveMs?: number;
}

const params = (request: FastifyRequest) => request.params as { id: string };
const query = (request: FastifyRequest) => request.query as Query;

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

    listSessions: async (request) => {
      const archive = parseArchiveFilter(query(request));
      const limit = parseLimit(query(request));
      const after = parseSessionCursor(query(request));
      const page = await context.runtimeFor(request).sessions.list({ archive, limit, after });
      return { data: page.sessions.map(toSessionDto), nextCursor: page.next ? encodeSessionCursor(page.next) : null };
    },
    createSession: async (request) => toSessionDto(await context.runtimeFor(request).sessions.create(request.body as CreateSessionBody)),
    getSession: async (request) => toSessionDto(await context.runtimeFor(request).sessions.get(params(request).id)),
    patchSession: async (request) => toSessionDto(await context.runtimeFor(request).sessions.patch(params(request).id, request.body as PatchSessionBody)),
    deleteSession: async (request) => {
      await context.runtimeFor(request).sessions.delete(params(request).id);
      return null;
    },
    getHistory: async (request) => {
      const limit = parseLimit(query(request));
      const cursor = parseIndexCursor(query(request));
      return toHistoryPageDto(await readHistoryPage(context.runtimeFor(request), params(request).id, { limit, cursor }));
    },
    forkSession: async (request) => toSessionDto(await forkSession(context.runtimeFor(request), params(request).id, request.body as ForkSessionBody)),
    createTurn: async (request) => toTurnDto(await context.runtimeFor(request).turns.submit(params(request).id, request.body as CreateTurnBody)),
    listTurns: async (request) => {
      const sessionId = parseOptionalUuid(query(request), 'sessionId');
      return { data: (await context.runtimeFor(request).turns.list(sessionId)).map(toTurnDto) };
    },
    getTurn: async (request) => toTurnDto(await context.runtimeFor(request).turns.get(params(request).id)),
    getTurnResult: async (request) => {
      const turn = await context.runtimeFor(request).turns.get(params(request).id);
      if (!isTerminal(turn.status)) throw new ApiError('turn_not_terminal', 'the turn has not ended yet', toTurnDto(turn));
      return { turn: toTurnDto(turn), output: turn.output };
    },
    cancelTurn: async (request) => toTurnDto(await context.runtimeFor(request).turns.cancel(params(request).id)),
    getTurnAgents: async (request) => {
      const runtime = context.runtimeFor(request);
      const turn = await runtime.turns.get(params(request).id);
      if (!runtime.turns.holds(turn.id)) throw new ApiError('turn_agents_unavailable', 'this process no longer holds the turn\'s agents');
      return { data: projectAgents([]) };
    },
    listRequests: async (request) => ({ data: context.runtimeFor(request).requests.list(parseOptionalUuid(query(request), 'turnId')).map(toHumanRequestDto) }),
    resolveRequest: async (request) => {
      const body = request.body as ResolveRequestBody;
      return toHumanRequestDto(context.runtimeFor(request).requests.resolve(params(request).id, body.decision, body.value));
    },
    streamEvents: async (request, reply) => {
      const runtime = context.runtimeFor(request);
      // a bad query or Last-Event-ID is 400 before any subscriber limit is counted
      const options = parseStreamOptions(request);
      const release = context.subscriberLimits.acquire(runtime.boundary.id);
      streamEvents(reply, options, runtime.hub.log, context.subscriberLimits, release, context.keepAliveMs);
      return reply;
    },
  } satisfies Record<string, Handler>;
  return handlers;
}

export type Handlers = ReturnType<typeof createHandlers>;
