// The image's HEALTHCHECK: GET /readyz on this container's agentd with its own bearer token
// (with a token every path needs it), healthy on 200. Node's fetch: the image needs no curl.
import { readFileSync } from 'node:fs';

const port = process.env.AGENTD_PORT || '4096';
const tokenFile = process.env.AGENTD_TOKEN_FILE;
const token = tokenFile ? readFileSync(tokenFile, 'utf8').trim() : process.env.SERVICE_TOKEN;
try {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(4000) });
  process.exitCode = response.status === 200 ? 0 : 1;
} catch {
  process.exitCode = 1;
}
