import type { CanonicalItem, Completion, Effort, ProviderAdapter, ToolKind, ToolSpec, Usage } from './providers/types.ts';
import { runModelStep, StepFailure, type RetryPolicy, type StepListener } from './model-step.ts';
import { addUsage } from './telemetry.ts';

/** A tool call found in the model's output, in the shape the loop executes. */
export interface ToolCall {
  callId: string;
  name: string;
  kind: ToolKind;
  /** JSON arguments for function tools, raw text for custom tools */
  input: string;
  item: CanonicalItem;
}

export interface ToolCallResult {
  output: string;
  truncated: boolean;
}

export interface AgentLoopOptions {
  adapter: ProviderAdapter;
  transportModel: string;
  effort: Effort | null;
  maxOutputTokens?: number;
  instructions: () => string;
  /** the durable model context before this turn */
  context: CanonicalItem[];
  userItem: CanonicalItem;
  tools: () => ToolSpec[];
  /** runs one call (policy, approvals and execution are the caller's) */
  executeTool: (call: ToolCall) => Promise<ToolCallResult>;
  listener: StepListener;
  signal: AbortSignal;
  maxSteps: number;
  retry?: RetryPolicy;
  /**
   * Calls of one step that may run side by side (spawn_agent): consecutive ones run concurrently,
   * at most `concurrency` at a time; every other call runs alone, in order.
   */
  runsConcurrently?: (call: ToolCall) => boolean;
  concurrency?: number;
  /** told after each model step that completed, with the text it answered (null when none) */
  stepCompleted?: (text: string | null, calls: number) => void;
}

export interface AgentLoopResult {
  /** new canonical items of this turn: the user message, model outputs and tool outputs */
  items: CanonicalItem[];
  /** partial output of discarded attempts, for display only */
  discardedText: string[];
  assistantText: string | null;
  responseId: string | null;
  completion: Completion;
  usage: Usage | null;
  /** what the last model request alone reported: how full the context was (CONTRACT.md §19) */
  lastRequestUsage: Usage | null;
  reportedModel: string | null;
  stopReason: string | null;
  apiDurationMs: number;
  steps: number;
}

/** What the model steps that completed before a failure came to: they were billed all the same. */
export interface LoopProgress {
  usage: Usage | null;
  lastRequestUsage: Usage | null;
  completedSteps: number;
  apiDurationMs: number;
  reportedModel: string | null;
  stopReason: string | null;
}

/** The partial state of a loop that failed, so the turn can show what happened. */
export class AgentLoopFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly partialItems: CanonicalItem[],
    readonly discardedText: string[],
    readonly progress: LoopProgress,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }

  /** tokens the completed steps used before the failure */
  get usage(): Usage | null {
    return this.progress.usage;
  }
}

export const DEFAULT_TOOL_CONCURRENCY = 4;

/**
 * Model step, tool calls, tool outputs, next step… until the model answers without calling a tool
 * or the step limit is reached. The whole canonical context is replayed each step (stateless).
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  const items: CanonicalItem[] = [options.userItem];
  const discardedText: string[] = [];
  let usage: Usage | null = null;
  let apiDurationMs = 0;
  let lastStep: Awaited<ReturnType<typeof runModelStep>> | null = null;
  let steps = 0;
  let completedSteps = 0;
  try {
    while (steps < options.maxSteps) {
      steps++;
      const step = await runModelStep(
        options.adapter,
        {
          transportModel: options.transportModel,
          instructions: options.instructions(),
          input: [...options.context, ...items],
          tools: options.tools(),
          effort: options.effort,
          maxOutputTokens: options.maxOutputTokens,
        },
        options.listener,
        options.signal,
        options.retry,
      );
      lastStep = step;
      completedSteps++;
      usage = addUsage(usage, step.usage);
      apiDurationMs += step.apiDurationMs;
      discardedText.push(...step.discardedText);
      items.push(...step.items);
      const calls = step.completion.status === 'completed' ? step.items.map(toToolCall).filter((call): call is ToolCall => call !== null) : [];
      options.stepCompleted?.(assistantTextOf(step.items), calls.length);
      if (calls.length === 0) {
        return finish(step.completion);
      }
      for (const batch of batches(calls, options.runsConcurrently)) {
        options.signal.throwIfAborted();
        const results = await mapBounded(batch, options.concurrency ?? DEFAULT_TOOL_CONCURRENCY, (call) => options.executeTool(call));
        batch.forEach((call, index) => items.push(toolOutputItem(call, results[index]!.output)));
      }
    }
    return finish({ status: 'incomplete', reason: 'step_limit' });
  } catch (error) {
    const progress: LoopProgress = { usage, lastRequestUsage: lastStep?.usage ?? null, completedSteps, apiDurationMs, reportedModel: lastStep?.model ?? null, stopReason: lastStep?.stopReason ?? null };
    if (error instanceof StepFailure) {
      discardedText.push(...error.partialText);
      throw new AgentLoopFailure(error.cause, items, discardedText, progress);
    }
    throw new AgentLoopFailure(error, items, discardedText, progress);
  }

  function finish(completion: Completion): AgentLoopResult {
    return {
      items,
      discardedText,
      assistantText: assistantTextOf(lastStep?.items ?? []),
      responseId: lastStep?.responseId ?? null,
      completion,
      usage,
      lastRequestUsage: lastStep?.usage ?? null,
      reportedModel: lastStep?.model ?? null,
      stopReason: lastStep?.stopReason ?? null,
      apiDurationMs,
      steps,
    };
  }
}

/** Consecutive calls that may run concurrently form one batch; every other call is a batch of its own. */
function batches(calls: ToolCall[], runsConcurrently: ((call: ToolCall) => boolean) | undefined): ToolCall[][] {
  const result: ToolCall[][] = [];
  let concurrent: ToolCall[] | null = null;
  for (const call of calls) {
    if (runsConcurrently?.(call)) {
      if (!concurrent) result.push((concurrent = []));
      concurrent.push(call);
    } else {
      concurrent = null;
      result.push([call]);
    }
  }
  return result;
}

/**
 * Runs `work` over the items with at most `limit` in flight, results in the items' order. The first
 * failure is thrown once every started piece has settled, so nothing still runs behind it.
 */
async function mapBounded<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failed = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return results;
}

export function toToolCall(item: CanonicalItem): ToolCall | null {
  if (item.type === 'function_call' && typeof item.call_id === 'string' && typeof item.name === 'string') {
    return { callId: item.call_id, name: item.name, kind: 'function', input: typeof item.arguments === 'string' ? item.arguments : '{}', item };
  }
  if (item.type === 'custom_tool_call' && typeof item.call_id === 'string' && typeof item.name === 'string') {
    return { callId: item.call_id, name: item.name, kind: 'custom', input: typeof item.input === 'string' ? item.input : '', item };
  }
  return null;
}

function toolOutputItem(call: ToolCall, output: string): CanonicalItem {
  return call.kind === 'custom'
    ? { type: 'custom_tool_call_output', call_id: call.callId, output }
    : { type: 'function_call_output', call_id: call.callId, output };
}

/** The visible answer: output_text of the assistant messages of the final step, or null. */
export function assistantTextOf(items: CanonicalItem[]): string | null {
  const texts: string[] = [];
  for (const item of items) {
    if (item.type !== 'message' || item.role !== 'assistant') continue;
    const content = item.content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) if (part && typeof part === 'object' && (part as { type?: string }).type === 'output_text') texts.push(String((part as { text?: unknown }).text ?? ''));
    }
  }
  return texts.length ? texts.join('\n\n') : null;
}
