import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { McpServerConfig } from '../config/mcp-config.ts';
import { mcpToolName } from './tool-names.ts';
import { callResultText, failedCall, type McpCallOutput } from './tool-output.ts';
import { redact, secretsOf } from './secrets.ts';

/** An MCP tool as the model is offered it. */
export interface McpTool {
  /** `mcp__<server>__<tool>` */
  name: string;
  server: string;
  /** the name on its server */
  serverToolName: string;
  description: string;
  /** JSON Schema of the arguments, as the server declared it */
  inputSchema: Record<string, unknown>;
  /** the server annotated it `readOnlyHint: true`: it may run without a tool_approval request */
  readOnly: boolean;
}

export interface ConnectionTimings {
  /** initialize must answer within this */
  connectTimeoutMs: number;
  /** a tools/call must answer within this */
  callTimeoutMs: number;
  /** first restart delay, doubled per failed attempt up to maxBackoffMs */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** characters of output the model gets from one call */
  outputLimit: number;
}

/**
 * One configured MCP server: connects, keeps its tool list current (start-up and
 * notifications/tools/list_changed), and when it fails to start or goes away drops its tools and
 * reconnects after a growing delay. Every attempt is a fresh client; a late event of an abandoned
 * one is ignored by its generation number.
 */
export class McpServerConnection {
  private client: Client | null = null;
  /** the attempt in flight, closed by close() so a server that never answers is not left running */
  private connecting: Client | null = null;
  private currentTools: McpTool[] = [];
  private generation = 0;
  /** the generation whose tools were last listed: the current one once the server is serving */
  private listedGeneration = -1;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly log: Logger;
  private readonly secrets: string[];

  constructor(
    private readonly config: McpServerConfig,
    private readonly timings: ConnectionTimings,
    logger: Logger,
    private readonly toolsChanged: () => void,
    private readonly clientVersion: string,
  ) {
    this.log = logger.child({ mcpServer: config.name });
    this.secrets = secretsOf(config);
  }

  get name(): string {
    return this.config.name;
  }

  get tools(): readonly McpTool[] {
    return this.currentTools;
  }

  /** Connected and its tools listed: they are offered to the model. */
  get serving(): boolean {
    return this.client !== null && this.listedGeneration === this.generation;
  }

  /** The first attempt; resolves when it succeeded or failed (a failure schedules a restart). */
  start(): Promise<void> {
    return this.connect();
  }

  async call(serverToolName: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallOutput> {
    const client = this.client;
    const generation = this.generation;
    if (!client) return failedCall(`the MCP server ${this.name} is not connected; it is being restarted`);
    try {
      const result = await client.callTool({ name: serverToolName, arguments: args }, undefined, { timeout: this.timings.callTimeoutMs, signal });
      return callResultText(result, this.timings.outputLimit);
    } catch (error) {
      if (signal?.aborted) throw error;
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return failedCall(`the MCP tool ${serverToolName} did not answer within ${this.timings.callTimeoutMs / 1000} s`, 'timeout');
      }
      if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
        return failedCall(`the MCP server ${this.name} refused the call: ${error.message}`);
      }
      // the transport failed (a dead process, an unreachable URL): treat the server as gone
      this.lost(error, generation);
      return failedCall(`the MCP server ${this.name} went away during the call; it is being restarted`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.generation++;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const client = this.client;
    const connecting = this.connecting;
    this.client = null;
    this.connecting = null;
    this.currentTools = [];
    await Promise.all([client?.close().catch(() => {}), connecting?.close().catch(() => {})]);
  }

  private async connect(): Promise<void> {
    const generation = ++this.generation;
    const client = new Client({ name: 'agentd', version: this.clientVersion }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () =>
      this.refresh(client, generation).catch((error: unknown) => this.log.warn({ reason: redact(error, this.secrets) }, 'MCP tool list refresh failed')),
    );
    this.connecting = client;
    try {
      await client.connect(this.transport(), { timeout: this.timings.connectTimeoutMs });
      if (this.connecting === client) this.connecting = null;
      if (generation !== this.generation) return void (await client.close());
      // only now: a failing connect closes its transport too, and its own error says more
      client.onclose = () => this.lost(new Error('the connection closed'), generation);
      this.client = client;
      await this.refresh(client, generation);
      this.failures = 0;
      this.log.info({ tools: this.currentTools.length }, 'MCP server connected');
    } catch (error) {
      if (this.connecting === client) this.connecting = null;
      this.lost(error, generation);
      await client.close().catch(() => {});
    }
  }

  private transport(): Transport {
    if (this.config.kind === 'stdio') {
      // a minimal environment (PATH, HOME, USER, …) plus the configured one: agentd's token and
      // provider keys are not handed to a tool server; its stderr is not ours to log
      return new StdioClientTransport({ command: this.config.command, args: this.config.args, env: { ...getDefaultEnvironment(), ...this.config.env }, stderr: 'ignore' });
    }
    return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers } });
  }

  /** tools/list, every page; a server that lists no tools has none. */
  private async refresh(client: Client, generation: number): Promise<void> {
    const listed: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timings.connectTimeoutMs });
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    if (generation !== this.generation) return;
    const tools: McpTool[] = [];
    for (const tool of listed) {
      const name = mcpToolName(this.name, tool.name);
      if (!name) {
        this.log.warn({ tool: tool.name.slice(0, 100) }, 'MCP tool skipped: its name does not fit mcp__<server>__<tool> in 64 letters, digits, _ or -');
        continue;
      }
      tools.push({
        name,
        server: this.name,
        serverToolName: tool.name,
        description: tool.description ?? tool.title ?? tool.annotations?.title ?? '',
        inputSchema: tool.inputSchema as Record<string, unknown>,
        readOnly: tool.annotations?.readOnlyHint === true,
      });
    }
    this.currentTools = tools;
    this.listedGeneration = generation;
    this.toolsChanged();
  }

  /** The server failed to start or went away: its tools vanish and a restart is scheduled. */
  private lost(error: unknown, generation: number): void {
    if (this.closed || generation !== this.generation) return;
    this.generation++;
    const client = this.client;
    this.client = null;
    void client?.close().catch(() => {});
    if (this.currentTools.length > 0) {
      this.currentTools = [];
      this.toolsChanged();
    }
    const delayMs = Math.min(this.timings.initialBackoffMs * 2 ** this.failures, this.timings.maxBackoffMs);
    this.failures++;
    this.log.warn({ reason: redact(error, this.secrets), restartInMs: delayMs, failures: this.failures }, 'MCP server unavailable; restarting');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.connect();
    }, delayMs);
    this.restartTimer.unref();
  }
}
