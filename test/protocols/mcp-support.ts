import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { before } from 'node:test';
import { useServerOnFakeProvider, type ServerOnFakeProvider } from '../support/harness.ts';

/** What a test answers an elicitation with: the option's fields, or null to decline. */
export type Elicit = (message: string, options: string[]) => Record<string, string> | null;

/** An MCP client of agentd's /mcp with `token`, answering elicitations with `elicit` when given. */
export async function mcpClient(url: string, token: string, elicit?: Elicit): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      const schema = (request.params as unknown as { requestedSchema: { properties: { option: { enum: string[] } } } }).requestedSchema;
      const content = elicit(request.params.message, schema.properties.option.enum);
      return content ? { action: 'accept', content } : { action: 'decline' };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/**
 * Registers the suite's hooks: a fake provider, a server with `token` whose models talk to it, and
 * an MCP client of its /mcp (closed first at the suite's end).
 */
export function useMcpAgent(token: string): ServerOnFakeProvider & { readonly agent: Client } {
  const started = useServerOnFakeProvider({ env: { SERVICE_TOKEN: token } });
  let agent: Client;
  before(async () => {
    agent = await mcpClient(started.server.url, token);
    started.closeFirst(() => agent.close());
  });
  return {
    get fake() {
      return started.fake;
    },
    get server() {
      return started.server;
    },
    get agent() {
      return agent;
    },
  };
}
