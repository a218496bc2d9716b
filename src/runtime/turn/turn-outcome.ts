import { NO_FILE_CHANGES, type FileChanges } from '../../domain/file-changes.ts';
import { boundEventText } from '../../domain/event-text.ts';
import { buildHistoryEntry, type HistoryEffect, type NewHistoryEntry } from '../../domain/history-entry.ts';
import type { TurnTransition } from '../../domain/turn-lifecycle.ts';
import { AgentLoopFailure, type AgentLoopResult } from '../../agent/loop.ts';
import { addUsage, costOf, telemetryEntries, totalUsage, type AgentRun } from '../../agent/telemetry.ts';
import { ProviderError, type CanonicalItem, type Usage } from '../../agent/providers/types.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import type { TurnOutputRecord, TurnText } from '../../domain/turn.ts';
import { SetupFailed } from '../session/setup.ts';
import { OutputInvalid } from '../../agent/structured-output.ts';

/** Thrown into a turn's abort signal by a cancel, so the end of the turn reads as `cancelled`. */
export class TurnCancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'TurnCancelled';
  }
}

/** How the execution of a turn ended, before anything of it is stored. */
export type TurnOutcome =
  | { kind: 'completed'; result: AgentLoopResult; model: CatalogModel; durationMs: number; effect: HistoryEffect }
  | { kind: 'failed' | 'cancelled'; error: string; partialItems: CanonicalItem[]; discardedText: string[]; usage: Usage | null; lastRequestUsage: Usage | null; mainRun: AgentRun | null };

export function failureOutcome(error: unknown, signal: AbortSignal, durationMs = 0): TurnOutcome {
  const failure = error instanceof AgentLoopFailure ? error : null;
  const progress = failure?.progress;
  const mainRun = progress ? { ...progress, providerTurns: progress.completedSteps, durationMs } : null;
  const partial = { partialItems: failure?.partialItems ?? [], discardedText: failure?.discardedText ?? [], usage: failure?.usage ?? null, lastRequestUsage: progress?.lastRequestUsage ?? null, mainRun };
  if (signal.aborted && signal.reason instanceof TurnCancelled) return { kind: 'cancelled', error: 'cancelled', ...partial };
  return { kind: 'failed', error: describeFailure(failure ? failure.cause : error), ...partial };
}

/**
 * What a log line may say of a failure: its kind (`provider_error`, `setup_failed`,
 * `internal_error`), not its text, which can quote a provider echoing the prompt or a command's output.
 */
export function failureKind(error: string): string {
  const colon = error.indexOf(':');
  return colon === -1 ? error : error.slice(0, colon);
}

export function describeFailure(cause: unknown): string {
  if (cause instanceof SetupFailed) return `setup_failed: ${cause.message}`;
  if (cause instanceof ProviderError) return `provider_error: ${cause.message}`;
  if (cause instanceof OutputInvalid) return `output_invalid: ${cause.message}`;
  if (cause instanceof Error) return `internal_error: ${cause.message}`;
  return 'internal_error';
}

/** What ending a turn stores: its terminal transition, its history entry and what it spent. */
export interface TurnEnding {
  transition: Extract<TurnTransition<TurnOutputRecord>, { kind: 'complete' | 'fail' | 'cancel' }>;
  history: NewHistoryEntry;
  spending: TurnSpending;
}

/** What a turn adds to its session's `spent` and leaves as its `context` (CONTRACT.md §19). */
interface TurnSpending {
  /** dollars of every agent's requests; null when the model has no prices or nothing was reported */
  costUsd: number | null;
  /** input plus output tokens of the main agent's last request; null when it reported none */
  contextUsedTokens: number | null;
  /** the model's context window; null when unknown */
  contextWindow: number | null;
}

function spendingOf(model: CatalogModel | null, runs: readonly AgentRun[], lastRequestUsage: Usage | null): TurnSpending {
  const costs = runs.map((run) => (model ? costOf(model, run.usage) : null)).filter((cost): cost is number => cost !== null);
  return {
    costUsd: costs.length === 0 ? null : costs.reduce((sum, cost) => sum + cost, 0),
    contextUsedTokens: lastRequestUsage ? lastRequestUsage.inputTokens + lastRequestUsage.outputTokens : null,
    contextWindow: model?.contextWindow ?? null,
  };
}

/**
 * `children` are the runs of the turn's child agents: their usage counts in the turn's (and so the
 * session's), and each that made requests has its own telemetry entry after the main agent's.
 * `model` is the session's model (null when it left the catalog: no entries then).
 */
export function endingOf(outcome: TurnOutcome, turnId: string, text: TurnText, at: string, model: CatalogModel | null, children: readonly AgentRun[] = []): TurnEnding {
  const origin = { turnId, at, userText: text.userText };
  const childUsage = totalUsage(children);
  if (outcome.kind !== 'completed') {
    const { error, partialItems, discardedText, usage, lastRequestUsage, mainRun } = outcome;
    const runs = mainRun ? [mainRun, ...children] : children;
    const providerTelemetry = telemetryEntries(model, runs);
    const history = buildHistoryEntry({ ...origin, usage: addUsage(usage, childUsage) }, { kind: 'failed', error, partialItems, discardedText, providerTelemetry });
    const transition = outcome.kind === 'cancelled' ? { kind: 'cancel' as const, at, error } : { kind: 'fail' as const, at, error };
    return { transition, history, spending: spendingOf(model, runs, lastRequestUsage) };
  }
  const { result } = outcome;
  const mainRun: AgentRun = {
    reportedModel: result.reportedModel,
    usage: result.usage,
    durationMs: outcome.durationMs,
    apiDurationMs: result.apiDurationMs,
    stopReason: result.stopReason,
    providerTurns: result.steps,
  };
  const history = buildHistoryEntry(
    { ...origin, usage: addUsage(result.usage, childUsage) },
    {
      kind: 'answered',
      effect: outcome.effect,
      assistantText: result.assistantText,
      responseId: result.responseId,
      items: result.items,
      discardedText: result.discardedText,
      providerTelemetry: telemetryEntries(outcome.model, [mainRun, ...children]),
      ...('result' in result ? { result: result.result } : {}),
    },
  );
  return { transition: { kind: 'complete', at, output: turnOutput(result) }, history, spending: spendingOf(outcome.model, [mainRun, ...children], result.lastRequestUsage) };
}

/** The turn's output: the answer bounded like event text (the history entry keeps all of it). */
function turnOutput(result: AgentLoopResult): TurnOutputRecord {
  const text = result.assistantText === null ? null : boundEventText(result.assistantText);
  return {
    responseId: result.responseId,
    assistantText: text?.text ?? null,
    assistantTextTruncated: text?.truncated ?? false,
    completion: { ...result.completion, reasoningTokens: result.usage?.reasoningTokens ?? null },
    ...('result' in result ? { result: result.result } : {}),
  };
}

/**
 * Input steered into a turn that failed or was cancelled before a model request showed it: it is
 * kept with the turn's partial output, for display (a completed turn's loop has shown all of it).
 */
export function withUnshownSteers(outcome: TurnOutcome, unshown: CanonicalItem[]): TurnOutcome {
  if (outcome.kind === 'completed' || unshown.length === 0) return outcome;
  return { ...outcome, partialItems: [...outcome.partialItems, ...unshown] };
}

/** The payload of `agent.turn.finished`: the answer as the turn stores it, before it is stored. */
export function agentFinishedPayload(result: AgentLoopResult, output: TurnOutputRecord) {
  const usage = result.usage;
  return {
    responseId: result.responseId,
    assistantText: output.assistantText,
    assistantTextTruncated: output.assistantTextTruncated,
    usage: usage ? { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, cachedTokens: usage.cachedTokens } : null,
    completion: output.completion,
  };
}

/**
 * The ending with the turn's change receipt: on its history entry whatever the outcome, and on its
 * output when it has one. A turn that never ran a tool has an empty receipt.
 */
export function withReceipt(ending: TurnEnding, receipt: { changes(): FileChanges } | undefined): TurnEnding {
  const changes = receipt?.changes() ?? NO_FILE_CHANGES;
  const transition = ending.transition.kind === 'complete' ? { ...ending.transition, output: { ...ending.transition.output, ...changes } } : ending.transition;
  return { ...ending, transition, history: { ...ending.history, changes } };
}
