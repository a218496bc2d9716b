import type { Logger } from 'pino';
import { NO_TRACING, otlpTarget, type Tracing } from './tracing.ts';

/**
 * Kept apart from tracing.ts, which the OpenTelemetry side (otel-tracing.ts) imports its words
 * from: this is the one file that loads that side.
 */
/** Tracing as the environment configures it: the SDK when an endpoint is set, NO_TRACING otherwise. */
export async function startTracing(env: NodeJS.ProcessEnv, serviceVersion: string, logger: Logger): Promise<Tracing> {
  const target = otlpTarget(env);
  if (!target) return NO_TRACING;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol === 'grpc') logger.warn('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: agentd sends OTLP over HTTP (JSON)');
  const { OtelTracing } = await import('./otel-tracing.ts');
  // the endpoint without credentials: the headers and any user:password in the URL stay out of logs
  const endpoint = new URL(target.url);
  endpoint.username = endpoint.password = endpoint.search = '';
  logger.info({ endpoint: endpoint.href }, 'tracing to an OTLP collector');
  return OtelTracing.forCollector(target, serviceVersion);
}
