import type { Usage } from './providers/types.ts';
import { descriptorOf } from './providers/dialects.ts';
import type { CatalogModel } from '../config/models-file.ts';

/** Adds one model step's usage into the running total; null stays null only if every step was null. */
export function addUsage(total: Usage | null, step: Usage | null): Usage | null {
  if (!step) return total;
  if (!total) return { ...step };
  const sumNullable = (a: number | null, b: number | null) => (a === null && b === null ? null : (a ?? 0) + (b ?? 0));
  return {
    inputTokens: total.inputTokens + step.inputTokens,
    outputTokens: total.outputTokens + step.outputTokens,
    cachedTokens: total.cachedTokens + step.cachedTokens,
    cacheCreationTokens: sumNullable(total.cacheCreationTokens, step.cacheCreationTokens),
    reasoningTokens: sumNullable(total.reasoningTokens, step.reasoningTokens),
    webSearchRequests: sumNullable(total.webSearchRequests, step.webSearchRequests),
  };
}

/**
 * Dollar cost from the models file's prices, or null when no prices are configured. Every adapter
 * counts cache reads and writes inside `inputTokens`, so the same formula holds for every dialect:
 * cache reads at the cached price, the rest of the prompt (cache writes included) at the input price.
 */
export function costOf(model: CatalogModel, usage: Usage | null): number | null {
  if (!model.prices || !usage) return null;
  const prices = model.prices;
  const cachedPrice = prices.cachedInputPerMillion ?? prices.inputPerMillion;
  const uncachedInput = Math.max(0, usage.inputTokens - usage.cachedTokens);
  const dollars = (uncachedInput * prices.inputPerMillion + usage.cachedTokens * cachedPrice + usage.outputTokens * prices.outputPerMillion) / 1_000_000;
  return Math.round(dollars * 1e8) / 1e8;
}

/**
 * `input_tokens` as the provider itself reports it: with the cached tokens where its dialect counts
 * them in (the descriptor's inputTokensIncludeCached), else without cache reads and writes.
 */
function providerInputTokens(model: CatalogModel, usage: Usage): number {
  if (descriptorOf(model.dialect).inputTokensIncludeCached) return usage.inputTokens;
  return Math.max(0, usage.inputTokens - usage.cachedTokens - (usage.cacheCreationTokens ?? 0));
}

/** What one agent's model requests in a turn came to: the material of its telemetry entry. */
export interface AgentRun {
  reportedModel: string | null;
  usage: Usage | null;
  durationMs: number;
  apiDurationMs: number;
  stopReason: string | null;
  /** model requests that completed */
  providerTurns: number;
}

export interface TelemetryInput extends AgentRun {
  model: CatalogModel;
}

/** The usage of several agents' requests together; null when none reported any. */
export function totalUsage(runs: readonly Pick<AgentRun, 'usage'>[]): Usage | null {
  return runs.reduce<Usage | null>((total, run) => addUsage(total, run.usage), null);
}

/**
 * A history turn's `providerTelemetry` (CONTRACT.md §15): one entry per agent whose requests
 * completed, in the order given (the main agent first); [] when none did.
 */
export function telemetryEntries(model: CatalogModel | null, runs: readonly AgentRun[]): ProviderTelemetryEntry[] {
  if (!model) return [];
  return runs.filter((run) => run.providerTurns > 0).map((run) => buildTelemetry({ model, ...run }));
}

export type ProviderTelemetryEntry = ReturnType<typeof buildTelemetry>;

/**
 * One entry of a history turn's `providerTelemetry` array (SPEC.md §2, CONTRACT.md §15): what one
 * agent's model requests cost and reported; null means the provider did not report it.
 */
export function buildTelemetry(input: TelemetryInput) {
  const cost = costOf(input.model, input.usage);
  const usage = input.usage;
  return {
    duration_ms: Math.round(input.durationMs),
    api_duration_ms: Math.round(input.apiDurationMs),
    cost_usd: cost,
    stop_reason: input.stopReason,
    provider_turns: input.providerTurns,
    structured_output: null,
    models: {
      [input.reportedModel ?? input.model.transportModel]: {
        input_tokens: usage ? providerInputTokens(input.model, usage) : null,
        output_tokens: usage?.outputTokens ?? null,
        cache_read_input_tokens: usage?.cachedTokens ?? null,
        cache_creation_input_tokens: usage?.cacheCreationTokens ?? null,
        web_search_requests: usage?.webSearchRequests ?? null,
        cost_usd: cost,
        context_window: input.model.contextWindow,
        max_output_tokens: input.model.maxOutputTokens,
        canonical_model: input.model.id,
        provider: input.model.provider,
      },
    },
  };
}
