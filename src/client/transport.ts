import { AgentdError } from './errors.ts';
import { OPERATION_ROUTES, type OperationTypes } from './generated/operations.ts';

export type OperationId = keyof OperationTypes;

export interface ClientOptions {
  /** e.g. http://127.0.0.1:4096 (a path prefix behind a proxy is kept) */
  baseUrl: string;
  /** bearer token; sent as `Authorization: Bearer <token>` */
  token?: string;
  /** a fetch implementation (default: the global one); tests and proxies wrap it */
  fetch?: typeof fetch;
}

interface CallControls {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Present when the operation has it; optional when it has nothing required (CreateSession: `{}`). */
type Slot<Name extends string, T> = [T] extends [never]
  ? { [K in Name]?: never }
  : {} extends T
    ? { [K in Name]?: T }
    : { [K in Name]: T };

/** The one argument of an operation method: `{ path?, query?, body?, headers?, signal? }`. */
export type OperationArgs<Id extends OperationId> = CallControls &
  Slot<'path', OperationTypes[Id]['path']> &
  Slot<'query', OperationTypes[Id]['query']> &
  Slot<'body', OperationTypes[Id]['body']>;

export type OperationResponse<Id extends OperationId> = OperationTypes[Id]['response'];

/** One method per operationId; the argument may be left out when nothing in it is required. */
export type OperationMethods = {
  [Id in OperationId]: {} extends OperationArgs<Id>
    ? (args?: OperationArgs<Id>) => Promise<OperationResponse<Id>>
    : (args: OperationArgs<Id>) => Promise<OperationResponse<Id>>;
};

interface LooseArgs extends CallControls {
  path?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
}

/** Sends one operation and decodes its answer; an error answer throws AgentdError. */
export class Transport {
  readonly baseUrl: string;
  private readonly fetchImplementation: typeof fetch;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImplementation = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  async call(operationId: OperationId, args: LooseArgs = {}): Promise<unknown> {
    const route = OPERATION_ROUTES[operationId];
    // An operation with a body schema always gets a JSON body: `{}` when every field is optional.
    const body = route.body ? (args.body ?? {}) : args.body;
    const response = await this.send(route.method, this.urlOf(route.path, args.path, args.query), { ...args, body });
    if (!response.ok) throw await AgentdError.fromResponse(response);
    if (route.stream) return response;
    if (response.status === 204) {
      await response.body?.cancel();
      return undefined;
    }
    return response.json();
  }

  send(method: string, url: string, args: CallControls & { body?: unknown } = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token !== undefined) headers.authorization = `Bearer ${this.options.token}`;
    if (args.body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, args.headers);
    return this.fetchImplementation(url, {
      method,
      headers,
      body: args.body === undefined ? undefined : JSON.stringify(args.body),
      signal: args.signal,
    });
  }

  urlOf(template: string, path: Record<string, string> = {}, query: LooseArgs['query'] = {}): string {
    const filled = template.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = path[name];
      if (typeof value !== 'string' || value === '') throw new TypeError(`path parameter ${name} is required`);
      return encodeURIComponent(value);
    });
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
    const queryText = search.toString();
    return `${this.baseUrl}${filled}${queryText ? `?${queryText}` : ''}`;
  }
}

export function operationMethods(transport: Transport): OperationMethods {
  const methods: Record<string, (args?: LooseArgs) => Promise<unknown>> = {};
  for (const operationId of Object.keys(OPERATION_ROUTES) as OperationId[]) {
    methods[operationId] = (args) => transport.call(operationId, args);
  }
  return methods as unknown as OperationMethods;
}
