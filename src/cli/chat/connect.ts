import pino from 'pino';
import { loadConfig } from '../../config/config.ts';
import { readTokenFile, validateToken } from '../../config/token-file.ts';
import { UsageError } from '../../config/flags.ts';
import { DatabaseInUse } from '../../store/database-claim.ts';
import { createClient, type AgentdClient } from '../../client/index.ts';
import type { ChatOptions } from './options.ts';

export interface Connection {
  client: AgentdClient;
  /** where the chat talks to, for the header */
  describe: string;
  /** the server's workspace roots when they are known here (a server started here); null for --url */
  workspaceRoots: string[] | null;
  /** a token was given (SERVICE_TOKEN or --token-file) */
  tokenGiven: boolean;
  close(): Promise<void>;
}

/**
 * A client of the server named by --url (token from SERVICE_TOKEN or --token-file, not both), or
 * of a server started here: loopback, a free port, the chat's directory as workspace root unless
 * --workspace-root says otherwise, logs off so they do not mix with the conversation. Relative
 * paths among the server options are read from `cwd`, where the chat was started.
 */
export async function connect(options: ChatOptions, env: NodeJS.ProcessEnv, cwd: string, chatDirectory: string): Promise<Connection> {
  if (options.url !== null) {
    if (options.tokenFile !== null && env.SERVICE_TOKEN) throw new UsageError('use one of SERVICE_TOKEN or --token-file, not both');
    const token = options.tokenFile !== null ? readTokenFile(options.tokenFile) : env.SERVICE_TOKEN ? validateToken(env.SERVICE_TOKEN, 'SERVICE_TOKEN') : undefined;
    return { client: createClient({ baseUrl: options.url, token }), describe: options.url, workspaceRoots: null, tokenGiven: token !== undefined, close: async () => undefined };
  }
  const rootGiven = options.serveArgs.some((arg) => arg === '--workspace-root' || arg.startsWith('--workspace-root='));
  const rootArgs = rootGiven ? [] : ['--workspace-root', chatDirectory];
  const config = await loadConfig([...options.serveArgs, ...rootArgs, '--host', '127.0.0.1', '--port', '0'], env, cwd);
  const { startServer } = await import('../../server.ts');
  let server;
  try {
    server = await startServer(config, env, pino({ level: 'silent' }));
  } catch (error) {
    if (!(error instanceof DatabaseInUse)) throw error;
    throw new UsageError(
      `the state dir ${config.stateDir} is in use by another agentd (an \`agentd serve\` started with it?): chat with that one with --url http://127.0.0.1:4096 (the address its "agentd listening on" line gave), or give this chat a state dir of its own with --state-dir DIR`,
    );
  }
  return {
    client: createClient({ baseUrl: server.url, token: config.token ?? undefined }),
    describe: `embedded server on ${server.url} for ${config.workspaceRoots.join(', ')}`,
    workspaceRoots: config.workspaceRoots,
    tokenGiven: config.token !== null,
    close: () => server.close(),
  };
}
