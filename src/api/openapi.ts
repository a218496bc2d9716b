import type { Contract } from './contract.ts';
import type { ParameterSet } from './parameters.ts';

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'invalid request', 401: 'missing or wrong bearer token', 403: 'origin, host or workspace refused',
  404: 'not found', 409: 'conflict with the current state', 413: 'request body too large',
  415: 'unsupported media type', 422: 'semantically invalid request', 429: 'subscriber or wait limit reached',
  414: 'request URL too long', 431: 'request headers too large',
  500: 'internal error', 503: 'unavailable or stopping (Retry-After)',
};

/** Answers any operation can give: access, the request head, internal errors and stopping. */
const ANY_OPERATION_ERRORS = [401, 403, 414, 431, 500, 503];

/** Builds the OpenAPI 3.1 document from the operation table and the named schemas, once. */
export function buildOpenApiDocument(version: string, contract: Contract): Record<string, unknown> {
  const schemas: Record<string, unknown> = {};
  const named = contract.namedSchemas;
  for (const [name, schema] of Object.entries(named)) schemas[name] = toJsonSchema(named, schema, name);

  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of contract.operations) {
    const path = operation.url.replace(/:(\w+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const match of operation.url.matchAll(/:(\w+)/g)) {
      parameters.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } });
    }
    parameters.push(...describeParameters(operation.query, 'query'), ...describeParameters(operation.headers, 'header'));

    const responses: Record<string, unknown> = {};
    const success = operation.success;
    responses[String(success.status)] = success.schema
      ? { description: success.description, content: { [success.contentType ?? 'application/json']: { schema: toJsonSchema(named, success.schema) } } }
      : { description: success.description };
    // A body sent where none is taken is still read, so any method but GET can be refused with 413.
    const bodyLimit = operation.method === 'GET' ? [] : [413];
    for (const status of [...operation.errors, ...ANY_OPERATION_ERRORS, ...bodyLimit]) {
      responses[String(status)] = { description: ERROR_DESCRIPTIONS[status], content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } };
    }
    paths[path] ??= {};
    paths[path][operation.method.toLowerCase()] = {
      operationId: operation.operationId,
      summary: operation.summary,
      ...(operation.extension ? { 'x-agentd-extension': true } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(operation.body ? { requestBody: { required: true, content: { 'application/json': { schema: toJsonSchema(named, operation.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'agentd', version, description: 'HTTP service that runs model-driven coding-agent sessions' },
    servers: [{ url: '/' }],
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{}, { bearer: [] }],
    paths,
  };
}

/** Plain JSON Schema with every nested named schema (recognised by its title) replaced by a $ref. */
function toJsonSchema(named: Record<string, unknown>, schema: unknown, ownName?: string): unknown {
  const walk = (value: unknown, depth: number): unknown => {
    if (Array.isArray(value)) return value.map((entry) => walk(entry, depth + 1));
    if (typeof value !== 'object' || value === null) return value;
    const object = value as Record<string, unknown>;
    const title = object.title;
    if (typeof title === 'string' && title in named && !(depth === 0 && title === ownName)) {
      return { $ref: `#/components/schemas/${title}` };
    }
    const copy: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(object)) copy[key] = walk(entry, depth + 1);
    return copy;
  };
  return walk(schema, 0);
}

/** The OpenAPI parameters of a query or header set, in declaration order. */
function describeParameters(set: ParameterSet | undefined, location: 'query' | 'header'): Record<string, unknown>[] {
  const properties = (set?.schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(properties).map(([name, { description, ...schema }]) => ({
    name, in: location, required: false, description, ...(set?.extensions?.includes(name) ? { 'x-agentd-extension': true } : {}), schema,
  }));
}
