import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.ts';
import { callerClient, credentialOf } from '../caller-client.ts';
import { headerOf, JSON_RPC_PARSE_ERROR, jsonOf, sendWebResponse, toWebRequest } from '../web-exchange.ts';
import { agentdMcpServer } from './tools.ts';

const SESSION_HEADER = 'mcp-session-id';
/** MCP sessions kept open at once; past this the oldest is closed. */
const MAX_SESSIONS = 10_000;

interface McpSession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  credential: string;
}

export interface McpEndpointOptions {
  selfUrl: () => string;
  /** how the caller's calls reach agentd's API (caller-client.ts) */
  dispatch: typeof fetch;
  version: string;
}

/**
 * agentd as an MCP server at /mcp (CONTRACT.md §22): Streamable HTTP on the official SDK, one
 * stateful MCP session per client (elicitation answers come back on it), each acting with the
 * bearer token that initialized it and refused to any other credential.
 */
export class McpEndpoint {
  private readonly sessions = new Map<string, McpSession>();

  constructor(private readonly options: McpEndpointOptions) {}

  async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const credential = credentialOf(request.headers.authorization);
    const body = request.body as Buffer | undefined;
    const parsedBody = request.method === 'POST' ? jsonOf(body) : undefined;
    if (request.method === 'POST' && parsedBody === undefined) return void reply.code(400).send(JSON_RPC_PARSE_ERROR);
    const sessionId = headerOf(request, SESSION_HEADER);
    if (sessionId !== undefined) {
      const session = this.sessions.get(sessionId);
      if (!session || session.credential !== credential) throw new ApiError('connection_not_found', 'no MCP session of yours has this Mcp-Session-Id: initialize a new one');
      return sendWebResponse(await session.transport.handleRequest(toWebRequest(request, reply, body), { parsedBody }), reply);
    }
    const server = agentdMcpServer(callerClient(this.options.selfUrl(), request.headers.authorization, this.options.dispatch), this.options.version);
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => this.remember(id, { transport, server, credential }),
      onsessionclosed: (id) => void this.sessions.delete(id),
    });
    await server.connect(transport);
    const response = await transport.handleRequest(toWebRequest(request, reply, body), { parsedBody });
    if (transport.sessionId === undefined) await server.close();
    await sendWebResponse(response, reply);
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((session) => session.server.close()));
    this.sessions.clear();
  }

  private remember(id: string, session: McpSession): void {
    this.sessions.set(id, session);
    if (this.sessions.size <= MAX_SESSIONS) return;
    const [oldestId, oldest] = this.sessions.entries().next().value!;
    this.sessions.delete(oldestId);
    void oldest.server.close();
  }
}
