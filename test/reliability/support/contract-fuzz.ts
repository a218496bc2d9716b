/**
 * Requests derived from the served /openapi.json, valid, at the boundaries and hostile, and the
 * rule every answer must keep: a documented status below 500, the error envelope with a known code
 * and the request's own id, never a hang. Used by the bounded test and scripts/fuzz.ts.
 */
import fc from 'fast-check';
import { ERROR_STATUS } from '../../../src/domain/errors.ts';
import { sendRaw, type RawRequest, type RawResponse } from './raw-http.ts';

/** The project's error table (CONTRACT.md §3 and the codes docs/API.md adds), code → status. */
const KNOWN_ERRORS: Record<string, number> = ERROR_STATUS;

export interface FuzzOperation {
  method: string;
  path: string;
  statuses: Set<number>;
  query: Array<{ name: string; schema: any }>;
  bodySchema: any | null;
}

/** /acp and /mcp speak JSON-RPC (CONTRACT.md §22): their errors are JSON-RPC's, not the envelope; test/protocols owns them. */
export function isProtocolPath(path: string): boolean {
  return path === '/acp' || path === '/mcp';
}

export function operationsOf(document: any): FuzzOperation[] {
  const operations: FuzzOperation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    if (isProtocolPath(path)) continue;
    for (const [method, operation] of Object.entries<any>(item)) {
      const parameters: any[] = operation.parameters ?? [];
      const body = operation.requestBody?.content?.['application/json']?.schema ?? null;
      operations.push({
        method: method.toUpperCase(),
        path,
        statuses: new Set(Object.keys(operation.responses).map(Number)),
        query: parameters.filter((parameter) => parameter.in === 'query').map((parameter) => ({ name: parameter.name, schema: parameter.schema })),
        bodySchema: body ? resolve(body, document) : null,
      });
    }
  }
  return operations;
}

function resolve(schema: any, document: any): any {
  if (schema?.$ref) return resolve(document.components.schemas[schema.$ref.split('/').pop()], document);
  return schema;
}

/** Values a JSON schema accepts, biased to its edges (empty, maximal lengths, limits). */
export function valueOf(schema: any, document: any, depth = 0): fc.Arbitrary<unknown> {
  schema = resolve(schema, document);
  if (!schema || depth > 4) return fc.jsonValue({ maxDepth: 1 });
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((alternative: any) => valueOf(alternative, document, depth + 1)));
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'uuid' || String(schema.pattern ?? '').includes('[0-9a-fA-F]{8}')) return fc.uuid();
      const min = schema.minLength ?? 0;
      const max = schema.maxLength ?? 64;
      return fc.oneof(fc.string({ minLength: min, maxLength: Math.min(max, 64), unit: 'grapheme' }), fc.constant('x'.repeat(max)), fc.constant('x'.repeat(min)));
    }
    case 'integer':
      return fc.oneof(fc.integer({ min: schema.minimum ?? -1_000, max: schema.maximum ?? 1_000 }), fc.constantFrom(schema.minimum ?? 0, schema.maximum ?? 2 ** 31));
    case 'number':
      return fc.double({ noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valueOf(schema.items, document, depth + 1), { maxLength: Math.min(schema.maxItems ?? 3, 6) });
    case 'object': {
      const properties = Object.fromEntries(Object.entries<any>(schema.properties ?? {}).map(([key, value]) => [key, valueOf(value, document, depth + 1)]));
      return fc.record(properties, { requiredKeys: schema.required ?? [] });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** The ids a path parameter may name: live ones, well-formed strangers and garbage. */
function pathIdOf(liveIds: () => string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.nat().map((n) => pick(liveIds(), n) ?? '00000000-0000-0000-0000-000000000000') },
    { weight: 1, arbitrary: fc.nat().map((n) => (pick(liveIds(), n) ?? 'x').toUpperCase()) },
    { weight: 2, arbitrary: fc.uuid().map((id) => id) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%00', '%C0%AF', '..%2F..%2Fetc', '.', '..', '%2e%2e', '%', 'a'.repeat(5_000), '%F0%9F%92%A9', '%ED%A0%80') },
  );
}

function pick<T>(values: T[], n: number): T | undefined {
  return values.length ? values[n % values.length] : undefined;
}

const JUNK_QUERY_VALUES = ['', '-1', '0', '1', '100', '101', '1.5', '1e2', '0x10', '99999999999999999999999', 'null', '%00', '%zz', 'ALL', 'active%20', 'a'.repeat(3_000)];

/**
 * Parameters that hold the request on purpose (`?wait=` long-polls a turn that may never end while
 * an approval is pending): the campaign keeps their valid values under its answer bound, so a
 * documented hold is not taken for a hang. Past-the-limit values still come from the junk list.
 */
const HOLDING_QUERY_SECONDS: Record<string, number> = { wait: 2 };

function declaredSchemaOf(name: string, schema: any): any {
  const hold = HOLDING_QUERY_SECONDS[name];
  return hold === undefined ? schema : { ...schema, maximum: Math.min(schema.maximum ?? hold, hold) };
}

/** Junk a validator could still coerce into a long valid hold ('0x10' is 16 to Ajv) is left out. */
function junkValuesOf(name: string, schema: any): string[] {
  const hold = HOLDING_QUERY_SECONDS[name];
  if (hold === undefined) return JUNK_QUERY_VALUES;
  return JUNK_QUERY_VALUES.filter((value) => value === '' || !(Number(value) > hold && Number(value) <= (schema.maximum ?? Infinity)));
}

function queryOf(operation: FuzzOperation, document: any, liveIds: () => string[]): fc.Arbitrary<string> {
  const declared = operation.query.map(({ name, schema }) =>
    fc.option(fc.oneof(valueOf(declaredSchemaOf(name, schema), document).map((value) => encodeURIComponent(String(value))), fc.constantFrom(...junkValuesOf(name, schema)), pathIdOf(liveIds)).map((value) => `${name}=${value}`), { nil: undefined }),
  );
  const extra = fc.option(fc.constantFrom('unknown=1', 'limit=1&limit=2', 'access_token=secret', 'sessionId=', '&&', '=', 'a[b]=c'), { nil: undefined });
  return fc.tuple(fc.tuple(...declared), extra).map(([values, more]) => {
    const parts = [...values, more].filter((part): part is string => part !== undefined);
    return parts.length ? `?${parts.join('&')}` : '';
  });
}

interface Body {
  bytes: Buffer | undefined;
  /** Content-Length written on the wire: true, shorter, longer (then the socket is half-closed) or absent */
  length: 'true' | 'short' | 'long' | 'absent';
}

function bodyOf(operation: FuzzOperation, document: any, maximumRequestBytes: number): fc.Arbitrary<Body> {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null');
  const valid = operation.bodySchema ? valueOf(operation.bodySchema, document) : fc.constant({});
  const bytes = fc.oneof(
    { weight: 5, arbitrary: valid.map(json) },
    { weight: 2, arbitrary: fc.tuple(valid, fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 1 })).map(([value, key, extra]) => json(typeof value === 'object' && value ? { ...value, [key || 'extra']: extra } : value)) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(json) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((array) => Buffer.from(array)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        Buffer.from('{"input": "unterminated'),
        Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"input":"bom"}')]),
        Buffer.from([0x7b, 0x22, 0x69, 0x6e, 0x70, 0x75, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        Buffer.from('{"input":"\\ud800 lone surrogate \\u0000 nul"}'),
        Buffer.from('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'),
        Buffer.from('['.repeat(20_000) + ']'.repeat(20_000)),
        Buffer.from(`{"input":"${'y'.repeat(maximumRequestBytes - 12)}"}`),
        Buffer.from(`{"input":"${'y'.repeat(maximumRequestBytes)}"}`),
        Buffer.from(''),
        Buffer.from('null'),
      ),
    },
  );
  const length = fc.constantFrom<Body['length']>('true', 'true', 'true', 'true', 'short', 'long', 'absent');
  return fc.record({ bytes: fc.option(bytes, { nil: undefined, freq: 6 }), length });
}

export interface FuzzTarget {
  port: number;
  document: any;
  maximumRequestBytes: number;
  /** ids of sessions, turns and requests that exist now */
  liveIds: () => string[];
  /** the bearer token when the server has one */
  token: string | null;
  allowedOrigin: string;
}

export interface FuzzCase {
  operation: FuzzOperation;
  /** the operation the method actually names on that path (HEAD answers as GET), null for none */
  answering: FuzzOperation | null;
  request: RawRequest;
  /** the request is not authorised: it must be refused by the access checks */
  mustBeRefused: boolean;
  /** Content-Length does not match the body: hanging up (after a 400 or not) is a fair answer */
  lyingLength: boolean;
}

export function caseOf(target: FuzzTarget, operations: FuzzOperation[]): fc.Arbitrary<FuzzCase> {
  return fc.constantFrom(...operations).chain((operation) => {
    const host = `127.0.0.1:${target.port}`;
    const hosts = fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom([host], [`localhost:${target.port}`], [`[::1]:${target.port}`], [host.toUpperCase()]) },
      { weight: 2, arbitrary: fc.constantFrom([], [''], ['evil.example'], [`127.0.0.1:${target.port + 1}`], [host, 'evil.example'], [`${host}.evil.example`], ['127.0.0.1'], [`${'h'.repeat(9_000)}`]) },
    );
    const origin = fc.oneof({ weight: 8, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constant(target.allowedOrigin) }, { weight: 1, arbitrary: fc.constantFrom('null', 'http://evil.example', `${target.allowedOrigin}/`, target.allowedOrigin.toUpperCase()) });
    const goodAuthorization = target.token ? `Bearer ${target.token}` : null;
    const authorization = fc.oneof(
      { weight: 6, arbitrary: fc.constant(goodAuthorization) },
      { weight: 2, arbitrary: fc.constantFrom(null, 'Bearer', 'Bearer ', 'bearer x', `bearer ${target.token ?? 'x'}`, `Bearer  ${target.token ?? 'x'}`, `Bearer ${target.token ?? 'x'} `, `Basic ${Buffer.from('a:b').toString('base64')}`, `Bearer ${(target.token ?? 'x').slice(0, -1)}`) },
    );
    const contentType = fc.constantFrom('application/json', 'application/json', 'application/json', 'APPLICATION/JSON; charset=UTF-8', 'application/json;charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', null);
    const lastEventId = fc.option(fc.oneof(fc.nat().map(String), fc.constantFrom('-1', '', '1.0', '1e3', ' 5', '18446744073709551616', 'abc', '0x1')), { nil: null, freq: 2 });
    const method = fc.oneof({ weight: 12, arbitrary: fc.constant(operation.method) }, { weight: 1, arbitrary: fc.constantFrom('TRACE', 'QUERY', 'PUT', 'OPTIONS', 'HEAD', 'CONNECT', 'get', 'PROPFIND') });
    return fc
      .record({ hosts, origin, authorization, contentType, lastEventId, method, id: pathIdOf(target.liveIds), query: queryOf(operation, target.document, target.liveIds), body: bodyOf(operation, target.document, target.maximumRequestBytes) })
      .map(({ hosts, origin, authorization, contentType, lastEventId, method, id, query, body }) => {
        const headers: Array<[string, string]> = hosts.map((value) => ['Host', value]);
        if (origin !== null) headers.push(['Origin', origin]);
        if (authorization !== null) headers.push(['Authorization', authorization]);
        if (contentType !== null && body.bytes !== undefined) headers.push(['Content-Type', contentType]);
        if (lastEventId !== null) headers.push(['Last-Event-ID', lastEventId]);
        let endAfterBody = false;
        if (body.bytes !== undefined && body.length !== 'absent') {
          const declared = body.length === 'short' ? Math.max(0, body.bytes.length - 3) : body.length === 'long' ? body.bytes.length + 7 : body.bytes.length;
          headers.push(['Content-Length', String(declared)]);
          endAfterBody = body.length === 'long';
        }
        const requestTarget = operation.path.replace('{id}', id) + query;
        // Surrounding whitespace is not part of a header value (RFC 9110 §5.5): the parser drops it.
        // A method the HTTP parser refuses (lower case) is answered before any header is read.
        const parsable = method === method.toUpperCase();
        // A CORS preflight (OPTIONS with an allowed Origin) needs no bearer (CONTRACT.md §1).
        const preflight = method === 'OPTIONS' && origin === target.allowedOrigin;
        const unauthorised = parsable && !preflight && ((origin !== null && origin !== target.allowedOrigin) || (goodAuthorization !== null && authorization?.trim() !== goodAuthorization));
        // HEAD is GET without the body (RFC 9110 §9.3.2), so it answers as the GET operation does.
        const answering = operations.find((candidate) => candidate.path === operation.path && candidate.method === (method === 'HEAD' ? 'GET' : method)) ?? null;
        return { operation, answering, request: { method, target: requestTarget, headers, body: body.length === 'absent' ? undefined : body.bytes, endAfterBody }, mustBeRefused: unauthorised, lyingLength: body.bytes !== undefined && (body.length === 'short' || body.length === 'long') };
      });

  });
}

/** Sends one case and returns what is wrong with the answer (empty when it kept the contract). */
export async function violationsOf(target: FuzzTarget, fuzzCase: FuzzCase): Promise<{ status: number | 'closed' | 'no answer'; problems: string[] }> {
  const { request } = fuzzCase;
  const answer = await sendRaw(target.port, request).catch((error: Error) => error);
  const what = `${request.method} ${request.target.slice(0, 120)} [${request.headers.map(([name, value]) => `${name}: ${value.slice(0, 60)}`).join('; ')}] body ${request.body?.length ?? 'none'}`;
  if (answer instanceof Error) return { status: 'no answer', problems: [`${what}: ${answer.message}`] };
  // Bytes beyond a short Content-Length are a second, malformed request; a body that stops short
  // of its Content-Length was cut off by us. Hanging up is a fair answer to both.
  // CONNECT is a tunnel request (authority-form only); Node hangs up on it without routing it.
  const hangUpIsFair = fuzzCase.lyingLength || request.method === 'CONNECT';
  if (answer === 'closed') return { status: 'closed', problems: hangUpIsFair ? [] : [`${what}: the connection closed without an answer`] };
  return { status: answer.status, problems: statusViolations(answer, fuzzCase).map((problem) => `${what} → ${answer.status}: ${problem}`) };
}

function statusViolations(answer: RawResponse, { answering, request, mustBeRefused }: FuzzCase): string[] {
  const problems: string[] = [];
  const requestId = answer.headers['x-request-id'];
  if (!requestId) problems.push('no X-Request-ID');
  if (answer.status >= 500) problems.push('a server error');
  // An unknown method is 404 route_not_found after the access checks; the parser refuses some (400).
  const expected = new Set(answering ? answering.statuses : [404, 403, 401, 204, 400, 413, 414, 431]);
  if (!expected.has(answer.status)) problems.push(`status not documented (${[...expected].join(', ')})`);
  if (mustBeRefused && answer.status !== 401 && answer.status !== 403 && answer.status !== 414 && answer.status !== 431) problems.push('an unauthorised request was not refused');
  if (answer.status >= 400) {
    let envelope: any;
    try {
      envelope = JSON.parse(answer.body);
    } catch {
      if (request.method !== 'HEAD') problems.push(`error body is not JSON: ${answer.body.slice(0, 80)}`);
      return problems;
    }
    const error = envelope?.error;
    if (!error || typeof error.message !== 'string' || typeof error.code !== 'string') problems.push(`not the error envelope: ${answer.body.slice(0, 120)}`);
    else {
      if (!(error.code in KNOWN_ERRORS)) problems.push(`unknown error code ${error.code}`);
      else if (KNOWN_ERRORS[error.code] !== answer.status) problems.push(`${error.code} belongs to status ${KNOWN_ERRORS[error.code]}`);
      if (error.requestId !== requestId) problems.push('error.requestId differs from X-Request-ID');
      if ((answer.status === 429 || answer.status === 503) && !answer.headers['retry-after']) problems.push('no Retry-After');
    }
  } else if (answer.status !== 204 && request.method !== 'HEAD' && !answer.headers['content-type']?.startsWith('text/event-stream')) {
    try {
      JSON.parse(answer.body);
    } catch {
      problems.push(`success body is not JSON: ${answer.body.slice(0, 80)}`);
    }
  }
  return problems;
}
