import pino from 'pino';
import { loadConfig } from '../../config/config.ts';
import { readTokenFile, validateToken } from '../../config/token-file.ts';
import { UsageError } from '../../config/flags.ts';
import { createClient, type AgentdClient } from '../../client/index.ts';
import type { ChatOptions } from './options.ts';

export interface Connection {
  client: AgentdClient;
  /** where the chat talks to, for the banner */
  describe: string;
  close(): Promise<void>;
}

/**
 * A client of the server named by --url (token from SERVICE_TOKEN or --token-file, not both), or
 * of a server started here: loopback, a free port, the current directory as workspace root, logs
 * off so they do not mix with the conversation.
 */
export async function connect(options: ChatOptions, env: NodeJS.ProcessEnv, cwd: string): Promise<Connection> {
  if (options.url !== null) {
    if (options.tokenFile !== null && env.SERVICE_TOKEN) throw new UsageError('use one of SERVICE_TOKEN or --token-file, not both');
    const token = options.tokenFile !== null ? readTokenFile(options.tokenFile) : env.SERVICE_TOKEN ? validateToken(env.SERVICE_TOKEN, 'SERVICE_TOKEN') : undefined;
    return { client: createClient({ baseUrl: options.url, token }), describe: options.url, close: async () => undefined };
  }
  const config = await loadConfig([...options.serveArgs, '--host', '127.0.0.1', '--port', '0'], env, cwd);
  const { startServer } = await import('../../server.ts');
  const server = await startServer(config, env, pino({ level: 'silent' }));
  return {
    client: createClient({ baseUrl: server.url, token: config.token ?? undefined }),
    describe: `embedded server on ${server.url} for ${cwd}`,
    close: () => server.close(),
  };
}
