import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AcpEndpoint } from './acp/http-endpoint.ts';
import type { McpEndpoint } from './mcp-server/http-endpoint.ts';
import { inProcessFetch } from './in-process-fetch.ts';

export interface ProtocolRoutesOptions {
  /** the server's own address, known once it listens: the endpoints call agentd's API there */
  selfUrl: () => string;
  version: string;
}

export interface ProtocolRoutes {
  close(): Promise<void>;
}

const METHODS = ['GET', 'POST', 'DELETE'] as const;

/**
 * /acp and /mcp (CONTRACT.md §22) on the application, behind the same access checks as every
 * path (the app's onRequest hook runs before any route). Their bodies are kept as read (within
 * the body limit) for the protocol SDKs, which are loaded with the first request, not at start-up.
 */
export function registerProtocolRoutes(app: FastifyInstance, options: ProtocolRoutesOptions): ProtocolRoutes {
  const endpointOptions = { ...options, dispatch: inProcessFetch(app) };
  let acp: Promise<AcpEndpoint> | null = null;
  let mcp: Promise<McpEndpoint> | null = null;
  const acpEndpoint = () => (acp ??= import('./acp/http-endpoint.ts').then(({ AcpEndpoint }) => new AcpEndpoint(endpointOptions)));
  const mcpEndpoint = () => (mcp ??= import('./mcp-server/http-endpoint.ts').then(({ McpEndpoint }) => new McpEndpoint(endpointOptions)));
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.route({ method: [...METHODS], url: '/acp', handler: async (request: FastifyRequest, reply: FastifyReply) => (await acpEndpoint()).handle(request, reply) });
    scope.route({ method: [...METHODS], url: '/mcp', handler: async (request: FastifyRequest, reply: FastifyReply) => (await mcpEndpoint()).handle(request, reply) });
  });
  return {
    close: async () => {
      await Promise.all([acp?.then((endpoint) => endpoint.close()), mcp?.then((endpoint) => endpoint.close())]);
    },
  };
}

/** /openapi.json's description of the two protocol paths, each an extension. */
export function withProtocolPaths(document: Record<string, unknown>): Record<string, unknown> {
  const paths = document.paths as Record<string, unknown>;
  const protocol = (name: string, summary: string) =>
    Object.fromEntries(
      METHODS.map((method) => [
        method.toLowerCase(),
        {
          operationId: `${name}${method[0]}${method.slice(1).toLowerCase()}`,
          summary,
          'x-agentd-extension': true,
          responses: { default: { description: 'as the protocol\'s Streamable HTTP transport answers; refusals of the access checks in the error envelope' } },
        },
      ]),
    );
  return {
    ...document,
    paths: {
      ...paths,
      '/acp': protocol('acp', 'Agent Client Protocol v1 over Streamable HTTP (the ACP SDK\'s experimental transport, a draft): POST client messages, GET the agent\'s SSE stream, DELETE a connection (docs/ACP.md)'),
      '/mcp': protocol('mcp', 'agentd as a Model Context Protocol server over Streamable HTTP: start_turn, answer_request, get_turn, cancel_turn, list_sessions (docs/MCP-SERVER.md)'),
    },
  };
}
