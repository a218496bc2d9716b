import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { contractFromSchemas, serializeContract } from '../../src/api/contract.ts';
import { buildOpenApiDocument } from '../../src/api/openapi.ts';

describe('the contract as JSON', () => {
  it('describes exactly what the TypeBox schemas describe', async () => {
    const fromSchemas = await contractFromSchemas();
    const fromJson = JSON.parse(serializeContract(fromSchemas));
    assert.deepEqual(buildOpenApiDocument('test', fromJson), buildOpenApiDocument('test', fromSchemas));
    assert.equal(fromJson.operations.length, fromSchemas.operations.length);
    const createSession = fromJson.operations.find((operation: { operationId: string }) => operation.operationId === 'createSession');
    assert.equal(createSession.body.additionalProperties, false, 'validation keywords survive');
  });
});
