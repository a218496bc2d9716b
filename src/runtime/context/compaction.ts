import { nowIso } from '../../domain/ids.ts';
import { userCommandOf } from '../../agent/user-command.ts';
import type { AgentLoopResult } from '../../agent/loop.ts';
import type { RetryPolicy, StepListener } from '../../agent/model-step.ts';
import { buildTelemetry } from '../../agent/telemetry.ts';
import type { CanonicalItem, ProviderAdapter, ToolSpec } from '../../agent/providers/types.ts';
import {
  arrayMeasure,
  CLEAR_COMMAND,
  COMPACT_COMMAND,
  contextBudget,
  estimateTokens,
  measureJson,
  tokensOf,
  type JsonMeasure,
  summarizeContext,
  summaryContextItem,
  type Summary,
} from '../../agent/compaction.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import { buildHistoryEntry, type HistoryEffect } from '../../domain/history-entry.ts';
import type { Db } from '../../store/database.ts';
import { appendHistoryEntry } from '../../store/history.ts';
import type { EventData } from '../../api/events.ts';
import type { EventHub } from '../event-hub.ts';
import { contextCommandOf } from './context-command.ts';
import { contextTokens } from './model-context.ts';
import type { ModelContextCache } from './model-context-cache.ts';
import type { ActiveTurn } from '../turn/active-turns.ts';

export interface CompactionDeps {
  db: Db;
  contexts: ModelContextCache;
  hub: EventHub;
  adapter: ProviderAdapter;
  /** the turn's retry policy (the boundary's stall timeout): the summary step is retried like the answer */
  retry: RetryPolicy;
}

/** The first model request of the turn, as far as its size is concerned. */
export interface FirstRequest {
  model: CatalogModel;
  instructions: string;
  userItem: CanonicalItem;
  tools: ToolSpec[];
}

export interface PreparedContext {
  /** the model context the agent loop starts from */
  context: CanonicalItem[];
  /** set for `/compact` and `/clear`: the turn ends with this result and history effect, without the agent loop */
  command: { result: AgentLoopResult; effect: HistoryEffect } | null;
}

type ResetEvent = EventData<'model.context.reset'>;

/**
 * Runs before the agent loop. `/clear` ends the turn as a `reset` (a new generation with an empty
 * context); `/compact` ends it as a `replace` whose items are the model's summary. Otherwise, when
 * the first request would not fit the model's context window, the context is summarised first and
 * stored as a `replace` turn of its own (turnId null: it is not the turn's own entry), and the
 * turn goes on from the summary. `model.context.reset` is emitted wherever the context is replaced.
 */
export async function prepareTurnContext(deps: CompactionDeps, turn: ActiveTurn, request: FirstRequest): Promise<PreparedContext> {
  // the user's own command asks the model nothing, so it neither needs a context nor is `/compact`
  if (userCommandOf(turn.record) !== null) return { context: [], command: null };
  const command = contextCommandOf(turn.record.input, turn.attachments);
  if (command === CLEAR_COMMAND) {
    emitReset(deps.hub, turn, 'clear');
    return { context: [], command: { effect: 'reset', result: commandResult(null, []) } };
  }
  const current = await deps.contexts.current(turn.session.id);
  // the agent loop and the summary take a plain array; the items stay frozen (shared by the cache)
  const context = current.items as CanonicalItem[];
  if (command === COMPACT_COMMAND) {
    const summary = context.length > 0 ? await summarize(deps, turn, request, context) : null;
    const items = summary ? [summaryContextItem(summary.text)] : [];
    emitReset(deps.hub, turn, 'compact');
    return { context: items, command: { effect: 'replace', result: commandResult(summary, items) } };
  }

  const budget = contextBudget(request.model.contextWindow);
  const estimate = Math.max(
    estimateTokens(request.instructions) + toolsTokens(request.tools) + contextTokens(current) + estimateTokens(request.userItem),
    // what the provider counted last time (CONTRACT.md §19 context) beats a guess from characters
    reportedContextTokens(turn, request),
  );
  // A context of one item is already as short as compaction makes it.
  if (budget === null || estimate <= budget || context.length <= 1) return { context, command: null };

  const summary = await summarize(deps, turn, request, context);
  const item = summaryContextItem(summary.text);
  const entry = buildHistoryEntry(
    { turnId: null, at: nowIso(), userText: '', usage: summary.step.usage },
    {
      kind: 'answered',
      effect: 'replace',
      assistantText: null,
      responseId: summary.step.responseId,
      items: [item],
      discardedText: [],
      providerTelemetry: [
        buildTelemetry({
          model: request.model,
          reportedModel: summary.step.model,
          usage: summary.step.usage,
          durationMs: Math.round(summary.step.apiDurationMs),
          apiDurationMs: Math.round(summary.step.apiDurationMs),
          stopReason: summary.step.stopReason,
          providerTurns: 1,
        }),
      ],
    },
  );
  const sessionId = turn.session.id;
  await deps.contexts.append(sessionId, entry, (index) => appendHistoryEntry(deps.db, sessionId, entry, { index }));
  emitReset(deps.hub, turn, 'context_window', { estimatedTokens: estimate, contextWindow: request.model.contextWindow });
  return { context: [item], command: null };
}

/**
 * The session's context figure, the last request's input plus output tokens as the provider
 * reported them, plus the new user message: how full the next request will be when the history
 * has not changed since. 0 before any request (nothing reported yet).
 */
function reportedContextTokens(turn: ActiveTurn, request: FirstRequest): number {
  const used = turn.session.context.usedTokens;
  return used > 0 ? used + estimateTokens(request.userItem) : 0;
}

/**
 * Tool specs are made once, by the registries and the tools modules, and never changed: each
 * one's JSON is measured once instead of every turn (their schemas weigh more than the rest).
 */
const specMeasures = new WeakMap<ToolSpec, JsonMeasure>();

/** estimateTokens(tools), from each spec's kept measure. */
export function toolsTokens(tools: ToolSpec[]): number {
  const sum: JsonMeasure = { chars: 0, images: 0, imageChars: 0 };
  for (const spec of tools) {
    let measure = specMeasures.get(spec);
    if (measure === undefined) specMeasures.set(spec, (measure = measureJson(spec)));
    sum.chars += measure.chars;
    sum.images += measure.images;
  }
  return tokensOf(arrayMeasure(tools.length, sum));
}

function summarize(deps: CompactionDeps, turn: ActiveTurn, request: FirstRequest, context: CanonicalItem[]): Promise<Summary> {
  const { model } = request;
  return summarizeContext({
    adapter: deps.adapter,
    transportModel: model.transportModel,
    tools: request.tools,
    maxOutputTokens: model.maxOutputTokens ?? undefined,
    contextWindow: model.contextWindow,
    context,
    listener: summaryListener(deps.hub, turn),
    signal: turn.abort.signal,
    retry: deps.retry,
  });
}

/** The summary is not the turn's answer: its text is not streamed; only retries are reported. */
function summaryListener(hub: EventHub, turn: ActiveTurn): StepListener {
  const ignore = () => {};
  return {
    textDelta: ignore,
    reasoningDelta: ignore,
    toolStarted: ignore,
    toolArguments: ignore,
    attemptFailed: (_error, attempt, delayMs) =>
      hub.emitText('warning', turn.session.id, turn.record.id, `compacting the context: model request ${attempt} failed; retrying in ${Math.round(delayMs / 100) / 10}s`),
  };
}

function emitReset(hub: EventHub, turn: ActiveTurn, reason: ResetEvent['reason'], extra: Pick<ResetEvent, 'estimatedTokens' | 'contextWindow'> = {}): void {
  hub.emit('model.context.reset', turn.session.id, turn.record.id, { displayOnly: true, reason, ...extra });
}

/** The result a command turn ends with, in the shape the turn runner stores for the agent loop's. */
function commandResult(summary: Summary | null, items: CanonicalItem[]): AgentLoopResult {
  const step = summary?.step;
  return {
    items,
    discardedText: step?.discardedText ?? [],
    assistantText: summary?.text ?? null,
    responseId: step?.responseId ?? null,
    completion: step?.completion ?? { status: 'completed' },
    usage: step?.usage ?? null,
    lastRequestUsage: step?.usage ?? null,
    reportedModel: step?.model ?? null,
    stopReason: step?.stopReason ?? null,
    apiDurationMs: step?.apiDurationMs ?? 0,
    steps: step ? 1 : 0,
  };
}
