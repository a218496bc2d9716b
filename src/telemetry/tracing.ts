/**
 * Traces: the Tracing port the server calls, the attributes a span may carry, and the switch that
 * reads the standard OTEL_* variables. The OpenTelemetry SDK (otel-tracing.ts) is imported only (start-tracing.ts)
 * when an OTLP endpoint is configured; otherwise every span is NO_TRACING's direct call of `fn`.
 */
import { UsageError } from '../config/flags.ts';

/**
 * The only attribute names a span may carry (the SDK side drops any other). None of them can hold
 * a prompt, an output, tool arguments or a token: ids, names, counts and codes only.
 */
export const SPAN_ATTRIBUTE_NAMES = [
  'http.request.method',
  'http.route',
  'http.response.status_code',
  'error.type',
  'agentd.session.id',
  'agentd.turn.id',
  'agentd.turn.status',
  'agentd.tenant',
  'agentd.tool.outcome',
  'gen_ai.operation.name',
  'gen_ai.system',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.output_tokens',
  'gen_ai.response.finish_reasons',
  'gen_ai.tool.name',
  'gen_ai.tool.call.id',
] as const;

type SpanAttributeName = (typeof SPAN_ATTRIBUTE_NAMES)[number];
export type SpanAttributes = Partial<Record<SpanAttributeName, string | number | boolean | string[]>>;

/** Where a span hangs in a trace: an opaque handle made by the tracing that is on. */
export interface TraceParent {
  readonly traceParentBrand: true;
}

export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
  /** This span as the parent of spans started elsewhere (another request, a later job). */
  readonly asParent: TraceParent | undefined;
}

export interface OpenSpan extends SpanHandle {
  /** Ends the span; an error marks it failed with `error.type` (its name or code), never its message. */
  end(error?: unknown): void;
}

export type SpanKind = 'server' | 'client' | 'internal';

export interface SpanOptions {
  /** Default: the span active in the current async context, if any. */
  parent?: TraceParent;
  kind?: SpanKind;
}

export interface Tracing {
  readonly enabled: boolean;
  /** Runs `fn` inside a span that is the active parent of spans `fn` starts; ends it when `fn` settles. */
  withSpan<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T> | T, options?: SpanOptions): Promise<T>;
  /** A span begun in one place and ended in another (HTTP hooks). */
  startSpan(name: string, attributes: SpanAttributes, options?: SpanOptions): OpenSpan;
  /** The parent a W3C `traceparent` (and `tracestate`) header names, if valid. */
  parentFromHeaders(headers: Record<string, string | string[] | undefined>): TraceParent | undefined;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

const NO_SPAN: OpenSpan = Object.freeze({ setAttributes() {}, end() {}, asParent: undefined });

export const NO_TRACING: Tracing = Object.freeze({
  enabled: false,
  withSpan: async <T>(_name: string, _attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T> | T) => fn(NO_SPAN),
  startSpan: () => NO_SPAN,
  parentFromHeaders: () => undefined,
  shutdown: async () => {},
});

/** Span names, GenAI semantic conventions where they apply ("{operation} {model or tool}"). */
export const spanNames = {
  httpRequest: (method: string, route: string) => `${method} ${route}`,
  turn: 'agentd.turn',
  modelRequest: (model: string) => `chat ${model}`,
  toolCall: (tool: string) => `execute_tool ${tool}`,
};

/** Attributes of a model request span as it starts. `system` is the provider (openai, anthropic, …). */
export function modelRequestAttributes(system: string, model: string): SpanAttributes {
  return { 'gen_ai.operation.name': 'chat', 'gen_ai.system': system, 'gen_ai.request.model': model };
}

/** Attributes of a model request span as it ends: token counts and why the model stopped. */
export function modelResponseAttributes(usage: { inputTokens: number; outputTokens: number } | null, finishReasons: string[]): SpanAttributes {
  return {
    ...(usage ? { 'gen_ai.usage.input_tokens': usage.inputTokens, 'gen_ai.usage.output_tokens': usage.outputTokens } : {}),
    'gen_ai.response.finish_reasons': finishReasons,
  };
}

export function toolCallAttributes(tool: string, callId: string): SpanAttributes {
  return { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool, 'gen_ai.tool.call.id': callId };
}

export function turnAttributes(sessionId: string, turnId: string, tenant?: string): SpanAttributes {
  return { 'agentd.session.id': sessionId, 'agentd.turn.id': turnId, ...(tenant ? { 'agentd.tenant': tenant } : {}) };
}

export interface OtlpTarget {
  /** the full traces URL, e.g. http://collector:4318/v1/traces */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
}

/**
 * Reads the standard variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given) or
 * OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), headers from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS,
 * OTEL_SERVICE_NAME; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn tracing off.
 * Returns null when tracing is off. Throws UsageError on a malformed endpoint.
 */
export function otlpTarget(env: NodeJS.ProcessEnv): OtlpTarget | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const exporters = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporters && !exporters.split(',').map((name) => name.trim()).includes('otlp')) return null;
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const baseEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const variable = tracesEndpoint ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const url = tracesEndpoint || (baseEndpoint ? baseEndpoint.replace(/\/+$/, '') + '/v1/traces' : '');
  if (!url) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`${variable}: not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`${variable}: must be an http:// or https:// URL`);
  const headerVariable = env.OTEL_EXPORTER_OTLP_TRACES_HEADERS !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_HEADERS' : 'OTEL_EXPORTER_OTLP_HEADERS';
  return {
    url,
    headers: parseOtlpHeaders(env[headerVariable] ?? '', headerVariable),
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'agentd',
  };
}

/** `key=value,key2=value2`, values percent-encoded (the OTLP exporter specification). */
function parseOtlpHeaders(text: string, variable: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue;
    const equals = pair.indexOf('=');
    const key = pair.slice(0, equals).trim();
    if (equals <= 0 || key === '') throw new UsageError(`${variable}: expected key=value pairs separated by commas`);
    try {
      headers[key.toLowerCase()] = decodeURIComponent(pair.slice(equals + 1).trim());
    } catch {
      throw new UsageError(`${variable}: the value of ${key} is not validly percent-encoded`);
    }
  }
  return headers;
}
