/**
 * The one interface every wire dialect implements. An adapter turns a ModelRequest into a
 * normalized stream of ProviderEvents; the agent loop never sees a dialect's own wire shapes.
 *
 * Canonical items are OpenAI Responses-style items (plain JSON objects with a `type`), the shape
 * SPEC.md §2 calls canonical history. Adapters for other dialects convert to and from them
 * losslessly, so a session can continue on another dialect after a fork.
 */

import type { CanonicalItem } from '../../domain/canonical-item.ts';
import type { Dialect } from '../../domain/dialect.ts';
import type { Effort } from '../../domain/effort.ts';
import type { ModelUsage as Usage } from '../../domain/usage.ts';

// The shared words this interface speaks in are declared in domain/; re-exported for the adapters.
export type { CanonicalItem, Dialect, Effort, Usage };

export type ToolKind = 'function' | 'custom' | 'computer' | 'computer_function';

export interface ToolSpec {
  name: string;
  description: string;
  /** function tools take JSON arguments described by `parameters`; custom tools take free text. */
  kind: 'function' | 'custom';
  parameters?: Record<string, unknown>;
  /** custom tools only: an optional grammar for the free-text input. */
  format?: { type: 'text' } | { type: 'grammar'; syntax: 'lark' | 'regex'; definition: string };
}

export interface ModelRequest {
  transportModel: string;
  instructions: string;
  /** The whole canonical context, replayed every step (stateless). */
  input: CanonicalItem[];
  tools: ToolSpec[];
  effort: Effort | null;
  maxOutputTokens?: number;
  /**
   * A turn's output schema (CONTRACT.md §22), sent in the dialect's native structured-output field
   * (Responses `text.format`, Chat Completions `response_format`, Anthropic `output_config.format`).
   */
  outputFormat?: { name: string; schema: Record<string, unknown> };
}

export interface Completion {
  status: 'completed' | 'incomplete';
  reason?: string;
}

export type ProviderEvent =
  /** `itemId`: the provider's id of the output item the text belongs to, when it gives one */
  | { type: 'text.delta'; text: string; itemId?: string }
  | { type: 'reasoning.delta'; text: string; itemId?: string }
  /** A tool call began streaming; arguments follow as deltas. */
  | { type: 'tool.started'; callId: string; name: string; kind: ToolKind; itemId?: string }
  | { type: 'tool.arguments.delta'; callId: string; delta: string }
  /** An output item in its final form, in output order. These become canonical history. */
  | { type: 'item.done'; item: CanonicalItem }
  /** The last event of a successful stream. */
  | {
      type: 'response.done';
      responseId: string;
      model: string | null;
      usage: Usage | null;
      completion: Completion;
      /** the provider's own stop reason (stop_reason / finish_reason / status), null if none */
      stopReason: string | null;
    };

export interface ConnectionSettings {
  provider: string;
  baseUrl: string;
  apiKey: string | null;
}

export interface ProviderAdapter {
  readonly dialect: Dialect;
  /** Streams one model step. Throws ProviderError on failure; honours `signal`. */
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ProviderEvent>;
}

/** Every provider failure, normalized. The runtime decides on retries from these fields. */
export class ProviderError extends Error {
  constructor(
    readonly provider: string,
    readonly status: number | null,
    readonly code: string | null,
    message: string,
    /** a retry may succeed (rate limit, overload, 5xx, dropped connection) */
    readonly retryable: boolean,
    /** from retry-after-ms / retry-after / reset headers, when the provider said */
    readonly retryAfterMs: number | null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
