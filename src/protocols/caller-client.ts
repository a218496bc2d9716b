import { createHash } from 'node:crypto';
import { createClient, type AgentdClient } from '../client/index.ts';

/**
 * The protocols served over HTTP (/acp, /mcp) act for their caller through agentd's own API on
 * the server's own address, with the caller's bearer token: every access rule (tenant, token,
 * Host) is the API's, applied per call, and no protocol reads a store or a runtime itself.
 * `dispatch` carries the calls (in-process-fetch.ts: inside the process).
 */
export function callerClient(selfUrl: string, authorization: string | undefined, dispatch: typeof fetch): AgentdClient {
  return createClient({ baseUrl: selfUrl, token: bearerOf(authorization), fetch: dispatch });
}

function bearerOf(authorization: string | undefined): string | undefined {
  return authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
}

/** Who a connection belongs to, without keeping the token: a connection id alone opens nothing. */
export function credentialOf(authorization: string | undefined): string {
  return createHash('sha256').update(authorization ?? '').digest('hex');
}
