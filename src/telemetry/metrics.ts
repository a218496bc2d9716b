import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PlainHistogram, type HistogramSeries } from './plain-histogram.ts';
import type { MetricsRecorder, ModelRequestStatus, TokenCounts, ToolCallOutcome, TurnQueueCounts } from './recorder.ts';

export interface PrometheusMetricsOptions {
  /** Multi-tenant mode: turn and token counters get a `tenant` label (tenants are a bounded set). */
  perTenant?: boolean;
  /** Process metrics (CPU, memory, event loop, handles); on unless a test wants a quiet registry. */
  processMetrics?: boolean;
}

/** Seconds: HTTP answers are mostly sub-millisecond, model requests and turns take seconds to minutes. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const MODEL_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320];
const TURN_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 3600];
/** Seconds from an event to its receiver's 2xx: milliseconds when it answers, hours after an outage. */
const WEBHOOK_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400];

/**
 * Every metric of issue 16 in one registry of its own, behind the MetricsRecorder calls. What every
 * HTTP request records is counted in plain numbers (about 50 ns a request) and handed to prom-client
 * on a scrape; the rarer recordings (per turn, model request, tool call) use label children looked
 * up once per label value and kept, so no call builds a label string of ours.
 */
export class PrometheusMetrics implements MetricsRecorder {
  readonly enabled = true;
  readonly registry = new Registry();
  private readonly perTenant: boolean;

  private readonly httpDuration = new PlainHistogram('agentd_http_request_duration_seconds', 'Time from request to response, by route pattern', 'route', HTTP_BUCKETS);
  private readonly turns: Counter<string>;
  private readonly turnDuration: Histogram;
  private readonly modelRequests: Counter<'provider' | 'status'>;
  private readonly modelDuration: Histogram<'phase'>;
  private readonly tokens: Counter<string>;
  private readonly toolCalls: Counter<'tool' | 'outcome'>;
  private readonly humanRequestsPending: Gauge;
  private readonly eventsDroppedTotal: Counter;
  private readonly webhooksDelivered: Counter;
  private readonly webhookLatency: Histogram;
  private readonly webhooksRetried: Counter;
  private readonly webhooksDropped: Counter;
  private readTurnQueue: () => TurnQueueCounts = () => ({ running: 0, queued: 0 });
  private readEventSubscribers: () => number = () => 0;

  /** route pattern → requests by status code (a sparse array) and the route's duration series */
  private readonly httpRoutes = new Map<string, RouteRecord>();
  private readonly turnChildren: Children<CounterChild>;
  private readonly tokenChildren: Children<CounterChild>;
  private readonly modelChildren: Children<CounterChild>;
  private readonly toolChildren: Children<CounterChild>;
  private readonly firstByte: ReturnType<Histogram['labels']>;
  private readonly toEnd: ReturnType<Histogram['labels']>;

  constructor(options: PrometheusMetricsOptions = {}) {
    this.perTenant = options.perTenant ?? false;
    const registers = [this.registry];
    const tenant = this.perTenant ? ['tenant'] : [];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });

    // Every request records these two, so they count in plain numbers and reach prom-client on a scrape.
    const httpRoutes = this.httpRoutes;
    new Counter({
      name: 'agentd_http_requests_total', help: 'HTTP requests answered, by route pattern and status code', labelNames: ['route', 'status'], registers,
      collect() {
        this.reset();
        for (const [route, { byStatus }] of httpRoutes) byStatus.forEach((count, status) => this.inc({ route, status: String(status) }, count));
      },
    });
    this.registry.registerMetric(this.httpDuration.asRegistryMetric());
    this.turns = new Counter({ name: 'agentd_turns_total', help: 'Turns that reached a terminal status', labelNames: ['status', ...tenant], registers });
    this.turnDuration = new Histogram({ name: 'agentd_turn_duration_seconds', help: 'Time from admission to terminal status', buckets: TURN_BUCKETS, registers });
    this.modelRequests = new Counter({ name: 'agentd_model_requests_total', help: 'Requests to model providers', labelNames: ['provider', 'status'], registers });
    this.modelDuration = new Histogram({ name: 'agentd_model_request_duration_seconds', help: 'Model request time to the first byte and to the end', labelNames: ['phase'], buckets: MODEL_BUCKETS, registers });
    this.tokens = new Counter({ name: 'agentd_tokens_total', help: 'Tokens reported by model providers', labelNames: ['kind', ...tenant], registers });
    this.toolCalls = new Counter({ name: 'agentd_tool_calls_total', help: 'Tool calls, by tool and outcome', labelNames: ['tool', 'outcome'], registers });
    this.humanRequestsPending = new Gauge({ name: 'agentd_human_requests_pending', help: 'Human requests waiting for an answer', registers });
    this.eventsDroppedTotal = new Counter({ name: 'agentd_events_dropped_total', help: 'Event subscribers reset for being too slow', registers });
    this.webhooksDelivered = new Counter({ name: 'agentd_webhooks_delivered_total', help: 'Webhook deliveries a receiver answered with 2xx', registers });
    this.webhookLatency = new Histogram({ name: 'agentd_webhook_delivery_seconds', help: 'Time from an event to its receiver\'s 2xx', buckets: WEBHOOK_BUCKETS, registers });
    this.webhooksRetried = new Counter({ name: 'agentd_webhooks_retried_total', help: 'Webhook delivery attempts that failed and will be retried', registers });
    this.webhooksDropped = new Counter({ name: 'agentd_webhooks_dropped_total', help: 'Webhook deliveries given up (24 h of failures, or the URL is no longer configured)', registers });

    const metrics = this;
    new Gauge({ name: 'agentd_turns_running', help: 'Turns running now', registers, collect() { this.set(metrics.readTurnQueue().running); } });
    new Gauge({ name: 'agentd_turns_queued', help: 'Turns waiting for a slot', registers, collect() { this.set(metrics.readTurnQueue().queued); } });
    new Gauge({ name: 'agentd_event_subscribers', help: 'Open event streams', registers, collect() { this.set(metrics.readEventSubscribers()); } });

    this.turnChildren = this.tenantLabels(this.turns);
    this.tokenChildren = this.tenantLabels(this.tokens);
    this.modelChildren = new Children((provider, status) => this.modelRequests.labels(provider, status));
    this.toolChildren = new Children((tool, outcome) => this.toolCalls.labels(tool, outcome));
    this.firstByte = this.modelDuration.labels('first_byte');
    this.toEnd = this.modelDuration.labels('end');
  }

  /** `route` is a route pattern or UNMATCHED_ROUTE, never a path a client sent: a bounded set. */
  httpRequestFinished(route: string, status: number, seconds: number): void {
    let record = this.httpRoutes.get(route);
    if (!record) this.httpRoutes.set(route, (record = { byStatus: [], duration: this.httpDuration.seriesOf(route) }));
    record.byStatus[status] = (record.byStatus[status] ?? 0) + 1;
    record.duration.observe(seconds);
  }

  turnFinished(status: string, seconds: number, tenant?: string): void {
    this.turnChildren.get(status, tenant ?? '').inc();
    this.turnDuration.observe(seconds);
  }

  turnEndedWithoutOwner(status: string, tenant?: string): void {
    this.turnChildren.get(status, tenant ?? '').inc();
  }

  observeTurnQueue(read: () => TurnQueueCounts): void {
    this.readTurnQueue = read;
  }

  modelRequestFinished(provider: string, status: ModelRequestStatus, secondsToFirstByte: number | null, secondsToEnd: number): void {
    this.modelChildren.get(provider, status).inc();
    if (secondsToFirstByte !== null) this.firstByte.observe(secondsToFirstByte);
    this.toEnd.observe(secondsToEnd);
  }

  tokensUsed(tokens: TokenCounts, tenant?: string): void {
    const who = tenant ?? '';
    if (tokens.input > 0) this.tokenChildren.get('input', who).inc(tokens.input);
    if (tokens.output > 0) this.tokenChildren.get('output', who).inc(tokens.output);
    if (tokens.cached > 0) this.tokenChildren.get('cached', who).inc(tokens.cached);
  }

  toolCallFinished(tool: string, outcome: ToolCallOutcome): void {
    this.toolChildren.get(tool, outcome).inc();
  }

  humanRequestOpened(): void {
    this.humanRequestsPending.inc();
  }

  humanRequestClosed(): void {
    this.humanRequestsPending.dec();
  }

  observeEventSubscribers(read: () => number): void {
    this.readEventSubscribers = read;
  }

  eventsDropped(count = 1): void {
    this.eventsDroppedTotal.inc(count);
  }

  webhookDelivered(seconds: number): void {
    this.webhooksDelivered.inc();
    this.webhookLatency.observe(seconds);
  }

  webhookRetried(): void {
    this.webhooksRetried.inc();
  }

  webhookDropped(count = 1): void {
    this.webhooksDropped.inc(count);
  }

  /** The Prometheus text exposition of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private tenantLabels(counter: Counter<string>): Children<CounterChild> {
    return new Children((value, tenant) => (this.perTenant ? counter.labels(value, tenant || 'none') : counter.labels(value)));
  }

}

type CounterChild = ReturnType<Counter['labels']>;

interface RouteRecord {
  byStatus: number[];
  duration: HistogramSeries;
}

/** Label children by two label values, made on first use: later lookups build no strings. */
class Children<Child> {
  private readonly byFirst = new Map<string, Map<string, Child>>();

  constructor(private readonly make: (first: string, second: string) => Child) {}

  get(first: string, second: string): Child {
    let bySecond = this.byFirst.get(first);
    if (!bySecond) this.byFirst.set(first, (bySecond = new Map()));
    let child = bySecond.get(second);
    if (!child) bySecond.set(second, (child = this.make(first, second)));
    return child;
  }
}
