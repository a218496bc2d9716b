/**
 * The server's telemetry as one object: the metrics recorder and its listener (with
 * --metrics-port), and tracing (with OTEL_EXPORTER_OTLP_*). Each library is imported only when its
 * feature is on, so a server without them loads neither prom-client nor the OpenTelemetry SDK.
 */
import type { Logger } from 'pino';
import { NO_METRICS, type MetricsRecorder } from './recorder.ts';
import type { Tracing } from './tracing.ts';
import { startTracing } from './start-tracing.ts';
import type { MetricsServer } from './metrics-server.ts';

export interface TelemetrySettings {
  /** null: no metrics */
  metricsPort: number | null;
  metricsHost: string;
  /** multi-tenant mode: per-tenant turn and token counters */
  perTenant: boolean;
}

export interface Telemetry {
  readonly metrics: MetricsRecorder;
  readonly tracing: Tracing;
  /** the scrape URL once listening, null without --metrics-port */
  readonly metricsUrl: string | null;
  /** Binds the metrics listener (after the API is bound). */
  listen(): Promise<void>;
  /** Stops the listener and flushes buffered spans. */
  close(): Promise<void>;
}

export async function startTelemetry(settings: TelemetrySettings, env: NodeJS.ProcessEnv, logger: Logger, version: string): Promise<Telemetry> {
  const tracing = await startTracing(env, version, logger);
  let metrics: MetricsRecorder = NO_METRICS;
  let scrapable: import('./metrics.ts').PrometheusMetrics | null = null;
  if (settings.metricsPort !== null) {
    const { PrometheusMetrics } = await import('./metrics.ts');
    metrics = scrapable = new PrometheusMetrics({ perTenant: settings.perTenant });
  }
  let server: MetricsServer | null = null;
  return {
    metrics,
    tracing,
    get metricsUrl() {
      return server?.url ?? null;
    },
    async listen() {
      if (!scrapable || server) return;
      const { startMetricsServer } = await import('./metrics-server.ts');
      server = await startMetricsServer(scrapable, settings.metricsHost, settings.metricsPort!, logger);
    },
    async close() {
      await Promise.all([server?.close(), tracing.shutdown().catch((error: Error) => logger.warn({ err: { message: error.message } }, 'flushing spans failed'))]);
    },
  };
}
