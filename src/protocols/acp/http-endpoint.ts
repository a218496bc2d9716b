import { AcpServer } from '@agentclientprotocol/sdk/experimental/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.ts';
import { callerClient, credentialOf } from '../caller-client.ts';
import { headerOf, JSON_RPC_PARSE_ERROR, jsonOf, sendWebResponse, toWebRequest } from '../web-exchange.ts';
import { acpAgent } from './agent.ts';

const CONNECTION_HEADER = 'acp-connection-id';
/** Connections remembered with their owner; the oldest is forgotten past this many. */
const MAX_CONNECTIONS = 10_000;

export interface AcpEndpointOptions {
  selfUrl: () => string;
  /** how the caller's calls reach agentd's API (caller-client.ts) */
  dispatch: typeof fetch;
  version: string;
}

/**
 * ACP over Streamable HTTP at /acp (CONTRACT.md §22), on the SDK's experimental server side:
 * POST carries client messages, an SSE GET the agent's. Each connection is an agent of its own
 * acting with its initializer's bearer token (caller-client.ts), and belongs to that credential:
 * a request naming another caller's connection is refused as if it did not exist.
 */
export class AcpEndpoint {
  private readonly server = new AcpServer({ createAgent: () => { throw new Error('each connection is made with its caller'); } });
  private readonly owners = new Map<string, string>();

  constructor(private readonly options: AcpEndpointOptions) {}

  async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const credential = credentialOf(request.headers.authorization);
    const connectionId = headerOf(request, CONNECTION_HEADER);
    if (connectionId !== undefined && this.owners.get(connectionId) !== credential) {
      throw new ApiError('connection_not_found', 'no ACP connection of yours has this Acp-Connection-Id: initialize a new one');
    }
    const body = request.body as Buffer | undefined;
    if (request.method === 'POST' && jsonOf(body) === undefined) return void reply.code(400).send(JSON_RPC_PARSE_ERROR);
    const log = request.log;
    const response = await this.server.handleRequest(toWebRequest(request, reply, body), {
      createAgent: () =>
        acpAgent({
          client: callerClient(this.options.selfUrl(), request.headers.authorization, this.options.dispatch),
          version: this.options.version,
          complain: (message, error) => log.warn({ err: error }, `acp: ${message}`),
        }),
    });
    const opened = response.headers.get(CONNECTION_HEADER);
    if (connectionId === undefined && opened) this.remember(opened, credential);
    if (request.method === 'DELETE' && connectionId !== undefined && response.ok) this.owners.delete(connectionId);
    await sendWebResponse(response, reply);
  }

  async close(): Promise<void> {
    await this.server.close();
  }

  private remember(connectionId: string, credential: string): void {
    this.owners.set(connectionId, credential);
    if (this.owners.size > MAX_CONNECTIONS) this.owners.delete(this.owners.keys().next().value!);
  }
}
