import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

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
