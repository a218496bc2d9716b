import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { CreateSessionBody, PatchSessionBody } from '../api/schemas.ts';
import { toSessionDto } from '../runtime/sessions.ts';
import type { BoundaryRuntime } from '../runtime/boundary-runtime.ts';
import { encodeSessionCursor, parseArchiveFilter, parseLimit, parseSessionCursor } from './query.ts';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
type Query = Record<string, string | string[] | undefined>;

export interface HandlerContext {
  /** The runtime of the boundary the request was admitted into. */
  runtimeFor(request: FastifyRequest): BoundaryRuntime;
  ping(): Promise<void>;
  openApiDocument: Record<string, unknown>;
  models(request: FastifyRequest): unknown[];
}

const params = (request: FastifyRequest) => request.params as { id: string };
const query = (request: FastifyRequest) => request.query as Query;

export function createHandlers(context: HandlerContext) {
  const notYet: Handler = async () => {
    throw new ApiError('not_implemented', 'this capability is not available in this release');
  };
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
    getHistory: notYet,
    forkSession: notYet,
    createTurn: notYet,
    listTurns: notYet,
    getTurn: notYet,
    getTurnResult: notYet,
    cancelTurn: notYet,
    getTurnAgents: notYet,
    listRequests: notYet,
    resolveRequest: notYet,
    streamEvents: notYet,
  } satisfies Record<string, Handler>;
  return handlers;
}

export type Handlers = ReturnType<typeof createHandlers>;
