import type { Logger } from 'pino';
import type { McpServerConfig } from '../config/mcp-config.ts';
import { MODEL_OUTPUT_LIMIT } from '../exec/output.ts';
import { McpServerConnection, type ConnectionTimings, type McpTool } from './server-connection.ts';
import { failedCall, type McpCallOutput } from './tool-output.ts';

export type { McpTool } from './server-connection.ts';
export type { McpCallOutput } from './tool-output.ts';

export interface McpManagerOptions extends Partial<ConnectionTimings> {
  logger: Logger;
  /** sent in initialize as the client's version */
  clientVersion?: string;
}

const DEFAULT_TIMINGS: ConnectionTimings = {
  connectTimeoutMs: 15_000,
  callTimeoutMs: 120_000,
  initialBackoffMs: 1_000,
  maxBackoffMs: 60_000,
  outputLimit: MODEL_OUTPUT_LIMIT,
};

/**
 * The MCP tool servers of --mcp-config. `tools()` is what the next model request is offered: only
 * tools of servers connected right now, so a server that connects after start-up joins every
 * session at its next model request. A server that cannot start does not stop the others or
 * agentd; it is retried with backoff until close().
 */
export class McpManager {
  private readonly connections: McpServerConnection[];
  private readonly listeners = new Set<() => void>();

  constructor(servers: readonly McpServerConfig[], options: McpManagerOptions) {
    const { logger, clientVersion = '0.0.0', ...overrides } = options;
    const timings = { ...DEFAULT_TIMINGS, ...withoutUndefined(overrides) };
    const changed = () => {
      for (const listener of this.listeners) listener();
    };
    this.connections = servers.map((server) => new McpServerConnection(server, timings, logger, changed, clientVersion));
  }

  /**
   * Connects to every server at once, in the background: agentd serves meanwhile (a server that
   * hangs would otherwise hold start-up for its whole connect timeout). The promise resolves when
   * each first attempt has succeeded or failed; nothing needs to wait for it.
   */
  async start(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.start()));
  }

  /** The servers whose tools are not available now: still connecting, or restarting after a failure. */
  pending(): string[] {
    return this.connections.filter((connection) => !connection.serving).map((connection) => connection.name);
  }

  tools(): McpTool[] {
    return this.connections.flatMap((connection) => connection.tools);
  }

  /** Called whenever a server's tool list changed, appeared or vanished. Returns the unsubscribe. */
  onToolsChanged(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls a tool by its model-facing name, with the timeout and the output bound. Rejects only when `signal` aborts. */
  async call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallOutput> {
    for (const connection of this.connections) {
      const tool = connection.tools.find((candidate) => candidate.name === name);
      if (tool) return connection.call(tool.serverToolName, args, signal);
    }
    return failedCall(`no MCP tool ${name} is available now (its server may be down)`);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await Promise.all(this.connections.map((connection) => connection.close()));
  }
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as Partial<T>;
}
