/**
 * What the rest of agentd asks of a wire dialect: one descriptor per dialect, in its folder
 * (providers/<dialect>/descriptor.ts), listed once in dialects.ts. A descriptor is plain data and a
 * loader, so reading it loads no provider SDK; the adapter comes with the first turn that needs it.
 */
import type { ConnectionSettings, Dialect, ProviderAdapter } from './types.ts';

export interface ProviderAdapterOptions {
  fetch?: typeof fetch;
}

/** The rate-limit headers a provider sends, for a retry's wait when it gives no retry-after. */
export interface RateLimitHeaders {
  /** the limits it reports on, e.g. requests and tokens */
  readonly limits: readonly string[];
  resetHeader(limit: string): string;
  remainingHeader(limit: string): string;
  /** a reset as a relative Go duration ("6m0s") or as an absolute RFC 3339 time */
  readonly resetFormat: 'go-duration' | 'timestamp';
}

export interface DialectDescriptor {
  readonly dialect: Dialect;
  /** the dialect takes a tool's input as free text: apply_patch is offered as a custom tool */
  readonly freeformTools: boolean;
  /** the provider's input token count already holds its cached tokens (cost and telemetry) */
  readonly inputTokensIncludeCached: boolean;
  readonly rateLimits: RateLimitHeaders;
  /** the adapter, loaded with its SDK on first use */
  loadAdapter(): Promise<(connection: ConnectionSettings, options: ProviderAdapterOptions) => ProviderAdapter>;
}
