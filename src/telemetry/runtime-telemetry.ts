/**
 * What the runtime records about its turns, model requests, tool calls and human requests: the
 * metrics recorder and the tracing of the server, handed down as one value. A runtime built without
 * it (unit tests, embedding) records nothing and pays a no-op call.
 */
import { NO_METRICS, type MetricsRecorder, type ToolCallOutcome } from './recorder.ts';
import { NO_TRACING, spanNames, toolCallAttributes, type Tracing } from './tracing.ts';

export interface RuntimeTelemetry {
  readonly metrics: MetricsRecorder;
  readonly tracing: Tracing;
}

export const NO_TELEMETRY: RuntimeTelemetry = Object.freeze({ metrics: NO_METRICS, tracing: NO_TRACING });

/**
 * Runs one tool call inside its span (a child of the turn's) and counts it by tool and outcome.
 * `run` answers the outcome with its result; a call that throws counts as `cancelled` when the turn
 * was aborted and as `error` otherwise. The span carries the tool's name and call id, never its
 * arguments or output.
 */
export async function recordToolCall<T>(
  telemetry: RuntimeTelemetry,
  tool: { name: string; callId: string },
  signal: AbortSignal,
  run: () => Promise<{ result: T; outcome: ToolCallOutcome }>,
): Promise<T> {
  const { metrics, tracing } = telemetry;
  if (!metrics.enabled && !tracing.enabled) return (await run()).result;
  let outcome: ToolCallOutcome = 'error';
  try {
    return await tracing.withSpan(spanNames.toolCall(tool.name), toolCallAttributes(tool.name, tool.callId), async (span) => {
      try {
        const done = await run();
        outcome = done.outcome;
        return done.result;
      } catch (error) {
        outcome = signal.aborted ? 'cancelled' : 'error';
        throw error;
      } finally {
        span.setAttributes({ 'agentd.tool.outcome': outcome });
      }
    });
  } finally {
    metrics.toolCallFinished(tool.name, outcome);
  }
}
