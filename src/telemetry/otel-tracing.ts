/** The OpenTelemetry side of the Tracing port; loaded only when tracing is configured. */
import { context, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { SPAN_ATTRIBUTE_NAMES, type OpenSpan, type OtlpTarget, type SpanAttributes, type SpanHandle, type SpanKind as OurSpanKind, type SpanOptions, type TraceParent, type Tracing } from './tracing.ts';

const ALLOWED_ATTRIBUTES: ReadonlySet<string> = new Set(SPAN_ATTRIBUTE_NAMES);
const KINDS: Record<OurSpanKind, SpanKind> = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL };

export interface OtelTracingOptions {
  serviceName: string;
  serviceVersion: string;
  exporter: SpanExporter;
  /** Batch exports (production); false exports each span as it ends (tests). */
  batch?: boolean;
}

/**
 * Spans through a tracer provider of this server's own (not the global one, so two servers in one
 * process keep their exporters apart). Parents travel through an AsyncLocalStorage context
 * manager, installed process-wide once.
 */
export class OtelTracing implements Tracing {
  readonly enabled = true;
  private readonly provider: NodeTracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();

  static forCollector(target: OtlpTarget, serviceVersion: string): OtelTracing {
    const exporter = new OTLPTraceExporter({ url: target.url, headers: target.headers, timeoutMillis: 5_000 });
    return new OtelTracing({ serviceName: target.serviceName, serviceVersion, exporter, batch: true });
  }

  constructor(options: OtelTracingOptions) {
    installContextManager();
    this.provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName, [ATTR_SERVICE_VERSION]: options.serviceVersion }),
      spanProcessors: [options.batch === false ? new SimpleSpanProcessor(options.exporter) : new BatchSpanProcessor(options.exporter)],
    });
    this.tracer = this.provider.getTracer('agentd', options.serviceVersion);
  }

  async withSpan<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T> | T, options: SpanOptions = {}): Promise<T> {
    const span = this.open(name, attributes, options);
    try {
      const result = await context.with(trace.setSpan(parentContext(options.parent), span), () => fn(wrap(span)));
      span.end();
      return result;
    } catch (error) {
      failed(span, error);
      span.end();
      throw error;
    }
  }

  startSpan(name: string, attributes: SpanAttributes, options: SpanOptions = {}): OpenSpan {
    const span = this.open(name, attributes, options);
    return {
      ...wrap(span),
      end(error?: unknown) {
        if (error !== undefined) failed(span, error);
        span.end();
      },
    };
  }

  parentFromHeaders(headers: Record<string, string | string[] | undefined>): TraceParent | undefined {
    const extracted = this.propagator.extract(ROOT_CONTEXT, headers, {
      keys: (carrier) => Object.keys(carrier),
      get: (carrier, key) => carrier[key],
    });
    return trace.getSpanContext(extracted) ? asParent(extracted) : undefined;
  }

  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }

  private open(name: string, attributes: SpanAttributes, options: SpanOptions): Span {
    return this.tracer.startSpan(name, { kind: KINDS[options.kind ?? 'internal'], attributes: allowedOnly(attributes) }, parentContext(options.parent));
  }
}

let contextManagerInstalled = false;

function installContextManager(): void {
  if (contextManagerInstalled) return;
  contextManagerInstalled = true;
  // false when an embedding application installed its own manager first, which serves as well
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

function parentContext(parent: TraceParent | undefined): Context {
  return parent ? (parent as unknown as { context: Context }).context : context.active();
}

function asParent(parentContext: Context): TraceParent {
  return { traceParentBrand: true, context: parentContext } as TraceParent;
}

function wrap(span: Span): SpanHandle {
  return {
    setAttributes: (attributes) => span.setAttributes(allowedOnly(attributes)),
    asParent: asParent(trace.setSpan(ROOT_CONTEXT, span)),
  };
}

/** The allow-list holds at run time too, against a cast or a caller in plain JavaScript. */
function allowedOnly(attributes: SpanAttributes): Attributes {
  const allowed: Attributes = {};
  for (const [name, value] of Object.entries(attributes)) if (ALLOWED_ATTRIBUTES.has(name) && value !== undefined) allowed[name] = value;
  return allowed;
}

/** The error's name or code marks the span; its message may quote a prompt or an output, so it stays out. */
function failed(span: Span, error: unknown): void {
  const type = (error as { code?: unknown })?.code;
  const name = typeof type === 'string' && /^[\w.-]{1,64}$/.test(type) ? type : error instanceof Error ? error.name : 'error';
  span.setAttribute('error.type', name);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
