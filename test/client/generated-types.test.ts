import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startTestServer, type TestServer } from '../support/server.ts';
import { GENERATED_FILE, hasJsonOrStreamSuccess, renderClientTypes } from '../../scripts/generate-client-types.ts';
import { createClient } from '../../src/client/index.ts';

describe('the SDK types', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('are exactly what the served /openapi.json generates (run `npm run build` after changing the contract)', async () => {
    const served = await createClient({ baseUrl: server.url }).getOpenApi();
    assert.equal(readFileSync(GENERATED_FILE, 'utf8'), renderClientTypes(served as never));
  });

  it('render every operation with its route, and the typed body of each', async () => {
    const served = (await createClient({ baseUrl: server.url }).getOpenApi()) as any;
    const rendered = renderClientTypes(served);
    for (const [path, methods] of Object.entries<any>(served.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        if (!hasJsonOrStreamSuccess(operation)) continue; // /mcp and /acp speak their own protocols
        assert.ok(rendered.includes(`  ${operation.operationId}: { method: '${method.toUpperCase()}', path: '${path}'`), operation.operationId);
      }
    }
    assert.match(rendered, /createTurn: \{\n\s+path: \{ id: string \};\n\s+query: never;\n\s+body: CreateTurn;\n\s+response: Turn;/);
  });
});
