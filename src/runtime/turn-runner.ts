import type { Logger } from 'pino';
import { nowIso } from '../domain/ids.ts';
import { boundEventText } from '../domain/event-text.ts';
import { runAgentLoop, AgentLoopFailure, type ToolCall, type ToolCallResult, type AgentLoopResult } from '../agent/loop.ts';
import type { StepListener } from '../agent/model-step.ts';
import { buildTelemetry } from '../agent/telemetry.ts';
import { codingInstructions } from '../agent/instructions.ts';
import type { CanonicalItem, ProviderAdapter, ToolKind, ToolSpec, Usage } from '../agent/providers/types.ts';
import { ProviderError } from '../agent/providers/types.ts';
import { findModel } from '../config/catalog.ts';
import type { CatalogModel } from '../config/models-file.ts';
import { finalizeTurn } from '../store/finalize.ts';
import type { HistoryEffect, NewHistoryEntry } from '../domain/history-entry.ts';
import * as turnsTable from '../store/turns.ts';
import type { TurnText } from '../store/turns.ts';
import { userMessageItem, writeTurnFiles } from '../workspace/attachments.ts';
import type { Boundary } from './boundary.ts';
import type { EventHub } from './event-hub.ts';
import { prepareTurnContext } from './compaction.ts';
import { TurnCancelled, type ActiveTurn, type TurnService } from './turns.ts';
import { UNTITLED } from './sessions.ts';
import { SetupFailed, type RepositorySetups } from './setup.ts';

export const MAX_AGENT_STEPS = 50;
export const HISTORY_NOT_STORED = 'internal_error: the history of this turn could not be stored';

/** What a turn needs to call tools: built per turn by the tool layer. */
export interface TurnTools {
  specs(): ToolSpec[];
  execute(call: ToolCall): Promise<ToolCallResult>;
  planMode(): boolean;
}

export interface TurnRunnerDeps {
  boundary: Boundary;
  hub: EventHub;
  turns: TurnService;
  adapterFor(model: CatalogModel): Promise<ProviderAdapter>;
  toolsFor(turn: ActiveTurn): TurnTools;
  setups: RepositorySetups;
  logger: Logger;
}

/**
 * Runs one admitted turn: running → agent loop → one transaction with the history entry, the
 * terminal state and the session counters → terminal event.
 */
export async function runTurn(deps: TurnRunnerDeps, turn: ActiveTurn): Promise<void> {
  const { hub, boundary } = deps;
  const { record, session } = turn;
  // The turn stays `queued` (no turn.started) until the session's repository setup has finished,
  // although it already holds a running slot of the scheduler.
  try {
    await deps.setups.ready(session, turn.abort.signal);
  } catch (error) {
    await finish(deps, turn, failureOutcome(error, turn), await wholeText(deps, turn));
    return;
  }
  const startedMs = performance.now();
  record.status = 'running';
  record.startedAt = nowIso();
  let files: Awaited<ReturnType<typeof writeTurnFiles>> | null = null;
  let outcome: Outcome;
  let text: TurnText | null = null;
  try {
    await turnsTable.updateTurn(boundary.db, record);
    text = await wholeText(deps, turn);
    hub.emit('turn.started', session.id, record.id, {});
    const model = findModel(boundary.catalog, session.model);
    if (!model) throw new Error(`the session's model "${session.model}" is no longer in the catalog`);
    files = await writeTurnFiles(session.cwd, record.id, turn.attachments.files);
    const userItem = userMessageItem(text.input, turn.attachments, files.paths);
    const tools = deps.toolsFor(turn);
    const adapter = await deps.adapterFor(model);
    hub.emit('agent.turn.started', session.id, record.id, {});
    // `/compact` and `/clear` end here; a context too large for the window is compacted first.
    const prepared = await prepareTurnContext(
      { db: boundary.db, hub, adapter },
      turn,
      { model, instructions: codingInstructions({ cwd: session.cwd, planMode: tools.planMode() }), userItem, tools: tools.specs() },
    );
    const result = prepared.command?.result ?? await runAgentLoop({
      adapter,
      transportModel: model.transportModel,
      effort: session.effort === 'none' ? null : (session.effort as never),
      maxOutputTokens: model.maxOutputTokens ?? undefined,
      instructions: () => codingInstructions({ cwd: session.cwd, planMode: tools.planMode() }),
      context: prepared.context,
      userItem,
      tools: () => tools.specs(),
      executeTool: (call) => tools.execute(call),
      listener: eventListener(hub, session.id, record.id),
      signal: turn.abort.signal,
      maxSteps: MAX_AGENT_STEPS,
    });
    outcome = { kind: 'completed', result, model, durationMs: performance.now() - startedMs, effect: prepared.command?.effect ?? 'append' };
  } catch (error) {
    outcome = failureOutcome(error, turn);
    if (outcome.kind === 'failed') deps.logger.warn({ turnId: record.id, error: outcome.error }, 'turn failed');
  } finally {
    await files?.cleanup().catch(() => {});
  }
  await finish(deps, turn, outcome, text ?? (await wholeText(deps, turn)));
}

/** The turn's whole text: the in-memory record holds it unless it was bounded, then the row does. */
async function wholeText(deps: TurnRunnerDeps, turn: ActiveTurn): Promise<TurnText> {
  const { record } = turn;
  const bounded = { input: record.input, userText: record.userText };
  if (!record.inputTruncated) return bounded;
  return (await turnsTable.readTurnText(deps.boundary.db, record.id).catch(() => null)) ?? bounded;
}

type Outcome =
  | { kind: 'completed'; result: AgentLoopResult; model: CatalogModel; durationMs: number; effect: HistoryEffect }
  | { kind: 'failed' | 'cancelled'; error: string; partialItems: CanonicalItem[]; discardedText: string[]; usage: Usage | null };

function failureOutcome(error: unknown, turn: ActiveTurn): Outcome {
  const cause = error instanceof AgentLoopFailure ? error.cause : error;
  const partialItems = error instanceof AgentLoopFailure ? error.partialItems : [];
  const discardedText = error instanceof AgentLoopFailure ? error.discardedText : [];
  const usage = error instanceof AgentLoopFailure ? error.usage : null;
  if (turn.abort.signal.aborted && turn.abort.signal.reason instanceof TurnCancelled) {
    return { kind: 'cancelled', error: 'cancelled', partialItems, discardedText, usage };
  }
  return { kind: 'failed', error: describeFailure(cause), partialItems, discardedText, usage };
}

export function describeFailure(cause: unknown): string {
  if (cause instanceof SetupFailed) return `setup_failed: ${cause.message}`;
  if (cause instanceof ProviderError) return `provider_error: ${cause.message}`;
  if (cause instanceof Error) return `internal_error: ${cause.message}`;
  return 'internal_error';
}

async function finish(deps: TurnRunnerDeps, turn: ActiveTurn, outcome: Outcome, turnText: TurnText): Promise<void> {
  const { boundary, hub } = deps;
  const { session } = turn;
  // The live record changes only once the terminal state is durable, so nobody sees a terminal
  // status while the session still counts as busy.
  const record = { ...turn.record };
  const finishedAt = nowIso();
  let history: NewHistoryEntry;
  let usage = null;
  if (outcome.kind === 'completed') {
    const { result, model } = outcome;
    const text = result.assistantText === null ? null : boundEventText(result.assistantText);
    usage = toUsageCounters(result.usage);
    record.status = 'completed';
    record.error = null;
    record.output = {
      responseId: result.responseId,
      assistantText: text?.text ?? null,
      assistantTextTruncated: text?.truncated ?? false,
      completion: { ...result.completion, reasoningTokens: result.usage?.reasoningTokens ?? null },
    };
    history = {
      turnId: record.id,
      at: finishedAt,
      userText: turnText.userText,
      assistantText: result.assistantText,
      error: null,
      responseId: result.responseId,
      effect: outcome.effect,
      items: result.items,
      displayItems: [...result.items, ...discardedAsDisplay(result.discardedText)],
      usage,
      providerTelemetry: buildTelemetry({
        model,
        reportedModel: result.reportedModel,
        usage: result.usage,
        durationMs: Math.round(outcome.durationMs),
        apiDurationMs: Math.round(result.apiDurationMs),
        stopReason: result.stopReason,
        providerTurns: result.steps,
      }),
    };
    hub.emit('agent.turn.finished', session.id, record.id, {
      responseId: result.responseId,
      assistantText: record.output.assistantText,
      assistantTextTruncated: record.output.assistantTextTruncated,
      usage: result.usage ? { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens, cachedTokens: result.usage.cachedTokens } : null,
      completion: record.output.completion,
    });
  } else {
    record.status = outcome.kind;
    record.error = outcome.error;
    // Steps that completed before the failure were billed: they count, in history and session.
    usage = toUsageCounters(outcome.usage);
    // Partial output is for display only: it never reaches `items`, so never a model again.
    history = {
      turnId: record.id,
      at: finishedAt,
      userText: turnText.userText,
      assistantText: null,
      error: outcome.error,
      responseId: null,
      effect: 'append',
      items: [],
      displayItems: [...outcome.partialItems, ...discardedAsDisplay(outcome.discardedText)],
      usage,
      providerTelemetry: null,
    };
  }
  record.finishedAt = finishedAt;
  const derivedTitle = !session.titleIsManual && session.title === UNTITLED ? deriveTitle(turnText.input) : null;
  try {
    await finalizeTurn(boundary.db, record, history, { sessionId: session.id, updatedAt: finishedAt, derivedTitle });
  } catch (error) {
    // Retried and still failing: nothing of the transaction was written. The turn fails with a
    // reason saying so and keeps its output (the bounded answer), stored with the failure when
    // that much can be, and in memory regardless.
    deps.logger.error({ err: error, turnId: record.id }, 'could not store the turn\'s history');
    record.status = 'failed';
    record.error = HISTORY_NOT_STORED;
    await turnsTable.updateTurn(boundary.db, record).catch(() => {});
  }
  Object.assign(turn.record, record);
  deps.turns.emitTerminal(turn);
  deps.turns.completed(turn);
}

function toUsageCounters(usage: Usage | null) {
  return usage ? { input: usage.inputTokens, output: usage.outputTokens, cached: usage.cachedTokens } : null;
}

function discardedAsDisplay(texts: string[]): CanonicalItem[] {
  return texts.map((text) => ({ type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text }] }));
}

export function deriveTitle(input: string): string | null {
  const firstLine = input.trim().split('\n')[0]?.trim() ?? '';
  if (!firstLine) return null;
  return firstLine.length > 80 ? `${firstLine.slice(0, 79)}…` : firstLine;
}

/** Provider stream → SSE events, with event text bounded and truncation flags set. */
function eventListener(hub: EventHub, sessionId: string, turnId: string): StepListener {
  const toolFields = (callId: string, name: string, kind: ToolKind, argumentsText: string | null) => {
    const bounded = argumentsText === null ? null : boundEventText(argumentsText);
    return { callId, name, kind, argumentsEncrypted: false, async: false, argumentsTruncated: bounded?.truncated ?? false, arguments: bounded?.text ?? null };
  };
  return {
    textDelta: (text) => hub.emitText('response.text.delta', sessionId, turnId, text),
    reasoningDelta: (text) => hub.emitText('response.reasoning.delta', sessionId, turnId, text),
    toolStarted: (callId, name, kind) => hub.emit('tool.started', sessionId, turnId, toolFields(callId, name, kind, null)),
    toolArguments: (callId, name, kind, soFar) => hub.emit('tool.arguments.updated', sessionId, turnId, toolFields(callId, name, kind, soFar)),
    attemptFailed: (error, attempt, delayMs, startedCallIds) => {
      for (const callId of startedCallIds) hub.emit('tool.retracted', sessionId, turnId, { callId, displayOnly: true });
      if (error.status === 429 || error.status === 529) {
        const bounded = boundEventText(`${error.provider} is rate limiting (HTTP ${error.status}); retrying in ${Math.round(delayMs / 100) / 10}s`);
        hub.emit('provider.limit', sessionId, turnId, { text: bounded.text, warning: bounded.text, truncated: bounded.truncated });
      }
      hub.emit('response.attempt.failed', sessionId, turnId, { displayOnly: true, attempt, status: error.status, retryInMs: delayMs });
      hub.emit('response.attempt.discarded', sessionId, turnId, { displayOnly: true, attempt });
      const reason = boundEventText(error.message);
      hub.emit('response.restarted', sessionId, turnId, { reason: reason.text, truncated: reason.truncated, displayOnly: true });
    },
  };
}
