import type { CanonicalItem, Completion, Effort, ProviderAdapter, ToolKind, ToolSpec, Usage } from './providers/types.ts';
import { runModelStep, StepFailure, type RetryPolicy, type StepListener } from './model-step.ts';
import { addUsage } from './telemetry.ts';
import { checkAnswer, MAX_OUTPUT_REASKS, OUTPUT_FORMAT_NAME, OutputInvalid, reaskItem, STRUCTURED_ANSWER_INSTRUCTION, type OutputSchema } from './structured-output.ts';
import type { RecordedModelStep, RecordedStep } from '../domain/turn-step.ts';
import { USER_COMMAND_STEP, userCommandItem } from './user-command.ts';

export type { RecordedStep };

/** A tool call found in the model's output, in the shape the loop executes. */
export interface ToolCall {
  callId: string;
  name: string;
  kind: ToolKind;
  /** JSON arguments for function tools, raw text for custom tools */
  input: string;
  item: CanonicalItem;
  /** the provider's id of the call's output item, when it gives one */
  itemId?: string;
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
  /**
   * Makes a step durable before the loop goes on (--cluster: CONTRACT.md §18): each model response
   * before its tool calls run, and each batch of tool results before the next model request. The
   * first step carries the user message too.
   */
  persist?: (step: RecordedStep) => Promise<void>;
  /** the steps a former owner of the turn recorded: the loop goes on after them, asking nothing again */
  resumeFrom?: readonly RecordedStep[];
  /** input a client steered into the turn (CONTRACT.md §19); the main agent's loop only */
  steering?: SteeringInbox;
  /**
   * Asked before each model request (the session's budget, CONTRACT.md §19): null to make it, or
   * the completion the loop ends with instead.
   */
  beforeRequest?: () => Promise<Completion | null>;
  /**
   * The turn's output schema (CONTRACT.md §22): the final answer must be JSON valid against it; an
   * answer that is not is sent back with its problems at most MAX_OUTPUT_REASKS times, then the
   * loop fails with OutputInvalid.
   */
  outputSchema?: OutputSchema;
  /** the user's own shell command (`!command`): run as a `shell` call in place of any model request */
  userCommand?: string;
}

/**
 * Steered input waiting for the loop. What `take` gives is shown to the model in the next request;
 * the loop ends only through `closeUnlessPending` or `close`, so nothing accepted is left unshown.
 */
export interface SteeringInbox {
  /** the messages that arrived since the last take, oldest first */
  take(): CanonicalItem[];
  /** the loop would end: closes the inbox when nothing waits (true), else leaves it open (false) */
  closeUnlessPending(): boolean;
  /** closes the inbox whatever waits, and gives what waited */
  close(): CanonicalItem[];
}

const NO_STEERING: SteeringInbox = { take: () => [], closeUnlessPending: () => true, close: () => [] };

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
  /** the final answer parsed and valid against the output schema; only with one */
  result?: unknown;
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

const DEFAULT_TOOL_CONCURRENCY = 4;

/**
 * Model step, tool calls, tool outputs, next step… until the model answers without calling a tool
 * and no steered input waits, or the step limit is reached. The whole canonical context is replayed each step (stateless).
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  const items: CanonicalItem[] = [options.userItem];
  const discardedText: string[] = [];
  let usage: Usage | null = null;
  let apiDurationMs = 0;
  /** the newest model response: its items and figures */
  let lastStep: { items: CanonicalItem[]; step: RecordedModelStep } | null = null;
  let steps = 0;
  let completedSteps = 0;
  /** items[0, persisted) are durable (options.persist) */
  let persisted = 0;
  const steering = options.steering ?? NO_STEERING;
  /** the request made past the step limit for steered input: the loop ends after it */
  let lastRequest = false;
  const outputSchema = options.outputSchema;
  let reasks = 0;
  const outputFormat = outputSchema ? { name: OUTPUT_FORMAT_NAME, schema: outputSchema.schema } : undefined;
  const instructions = outputSchema ? () => [options.instructions(), STRUCTURED_ANSWER_INSTRUCTION].filter((part) => part !== '').join('\n\n') : options.instructions;
  const persist = async (modelStep: RecordedModelStep | null) => {
    if (!options.persist) return;
    await options.persist({ items: items.slice(persisted), modelStep });
    persisted = items.length;
  };
  const runCalls = async (calls: ToolCall[]) => {
    for (const batch of batches(calls, options.runsConcurrently)) {
      options.signal.throwIfAborted();
      const results = await mapBounded(batch, options.concurrency ?? DEFAULT_TOOL_CONCURRENCY, (call) => options.executeTool(call));
      batch.forEach((call, index) => items.push(toolOutputItem(call, results[index]!.output)));
      await persist(null);
    }
  };
  try {
    if (options.userCommand !== undefined) return await runUserCommand(options.userCommand);
    if (options.resumeFrom?.length) {
      // The recorded steps replace the user message given: they begin with the one first sent.
      items.length = 0;
      for (const recorded of options.resumeFrom) {
        const stepItems = [...recorded.items];
        items.push(...stepItems);
        if (!recorded.modelStep) continue;
        lastStep = { items: stepItems, step: recorded.modelStep };
        steps++;
        completedSteps++;
        usage = addUsage(usage, recorded.modelStep.usage);
        apiDurationMs += recorded.modelStep.apiDurationMs;
      }
      persisted = items.length;
      // Only the newest response can have calls without a result: each batch's results were
      // recorded before the next request. The caller decides whether each such call runs.
      const unanswered = unansweredCalls(options.resumeFrom);
      if (unanswered.length > 0) await runCalls(unanswered);
      else if (lastStep && options.resumeFrom.at(-1)!.modelStep !== null && callsOf(lastStep.items, lastStep.step.completion).length === 0) {
        // the answer was recorded, the turn's end was not: it ends on that answer
        if (steering.closeUnlessPending()) return await finish(lastStep.step.completion, assistantTextOf(lastStep.items));
      }
    }
    for (;;) {
      // At the step limit, input steered in still gets its one request: the last.
      if (steps >= options.maxSteps) {
        const waiting = steering.close();
        if (waiting.length === 0) return await finish({ status: 'incomplete', reason: 'step_limit' });
        items.push(...waiting);
        lastRequest = true;
      }
      const stop = await options.beforeRequest?.();
      if (stop) {
        // what was steered in stays in the turn's items: the session's next request shows it
        items.push(...steering.close());
        return await finish(stop);
      }
      // taken after the wait, so input steered in while the turn waited is in this request
      if (!lastRequest) items.push(...steering.take());
      steps++;
      const step = await runModelStep(
        options.adapter,
        {
          transportModel: options.transportModel,
          instructions: instructions(),
          input: [...options.context, ...items],
          tools: options.tools(),
          effort: options.effort,
          maxOutputTokens: options.maxOutputTokens,
          outputFormat,
        },
        options.listener,
        options.signal,
        options.retry,
      );
      const recorded: RecordedModelStep = { usage: step.usage, completion: step.completion, responseId: step.responseId, model: step.model, stopReason: step.stopReason, apiDurationMs: step.apiDurationMs };
      lastStep = { items: step.items, step: recorded };
      completedSteps++;
      usage = addUsage(usage, step.usage);
      apiDurationMs += step.apiDurationMs;
      discardedText.push(...step.discardedText);
      items.push(...step.items);
      await persist(recorded);
      const calls = callsOf(step.items, step.completion);
      options.stepCompleted?.(assistantTextOf(step.items), calls.length);
      if (calls.length === 0) {
        // Input steered in during this request is answered by one more.
        if (!(lastRequest || steering.closeUnlessPending())) continue;
        const answer = assistantTextOf(step.items);
        const checked = outputSchema ? await checkAnswer(outputSchema, answer) : null;
        if (checked && 'problems' in checked && reasks < MAX_OUTPUT_REASKS && !lastRequest) {
          reasks++;
          items.push(reaskItem(checked.problems));
          continue;
        }
        return await finish(step.completion, answer);
      }
      await runCalls(calls);
      if (lastRequest) return await finish({ status: 'incomplete', reason: 'step_limit' });
    }
  } catch (error) {
    const last = lastStep?.step;
    const progress: LoopProgress = { usage, lastRequestUsage: last?.usage ?? null, completedSteps, apiDurationMs, reportedModel: last?.model ?? null, stopReason: last?.stopReason ?? null };
    if (error instanceof StepFailure) {
      discardedText.push(...error.partialText);
      throw new AgentLoopFailure(error.cause, items, discardedText, progress);
    }
    throw new AgentLoopFailure(error, items, discardedText, progress);
  }

  /** The command's call, recorded before it runs, and its output; a resumed turn runs only what its steps left unanswered. */
  async function runUserCommand(command: string): Promise<AgentLoopResult> {
    items.length = 0;
    if (options.resumeFrom?.length) {
      for (const recorded of options.resumeFrom) items.push(...recorded.items);
      persisted = items.length;
      await runCalls(unansweredCalls(options.resumeFrom));
    } else {
      items.push(userCommandItem(command));
      await persist(USER_COMMAND_STEP);
      const call = toToolCall(items[0]!)!;
      options.listener.toolStarted(call.callId, call.name, call.kind);
      options.listener.toolArguments(call.callId, call.name, call.kind, call.input);
      await runCalls([call]);
    }
    return finish({ status: 'completed' });
  }

  /** `answer`: the final answer, validated here when the turn has an output schema (OutputInvalid when it is not valid) */
  async function finish(completion: Completion, answer: string | null = null): Promise<AgentLoopResult> {
    const last = lastStep?.step;
    const structured = outputSchema ? await structuredResult(outputSchema, answer, completion) : {};
    return {
      ...structured,
      items,
      discardedText,
      assistantText: assistantTextOf(lastStep?.items ?? []),
      responseId: last?.responseId ?? null,
      completion,
      usage,
      lastRequestUsage: last?.usage ?? null,
      reportedModel: last?.model ?? null,
      stopReason: last?.stopReason ?? null,
      apiDurationMs,
      steps,
    };
  }
}

/** The result of a final answer under an output schema, or OutputInvalid saying why there is none. */
async function structuredResult(outputSchema: OutputSchema, answer: string | null, completion: Completion): Promise<{ result: unknown }> {
  if (completion.status === 'incomplete' && answer === null) throw new OutputInvalid(`the turn ended (${completion.reason ?? 'incomplete'}) before an answer valid against the output schema`);
  const checked = await checkAnswer(outputSchema, answer);
  if ('result' in checked) return checked;
  throw new OutputInvalid(`the answer is still not valid against the output schema after ${MAX_OUTPUT_REASKS} re-asks: ${checked.problems.join('; ')}`);
}

/** The calls of the newest recorded model response whose result was not recorded, in order. */
export function unansweredCalls(steps: readonly RecordedStep[]): ToolCall[] {
  const newest = steps.findLastIndex((step) => step.modelStep !== null);
  if (newest === -1) return [];
  const answered = new Set(steps.slice(newest + 1).flatMap((step) => step.items.map(outputCallId)));
  return callsOf(steps[newest]!.items, steps[newest]!.modelStep!.completion).filter((call) => !answered.has(call.callId));
}

/** The tool calls a model response asks for: none unless it completed. */
function callsOf(stepItems: CanonicalItem[], completion: Completion): ToolCall[] {
  return completion.status === 'completed' ? stepItems.map(toToolCall).filter((call): call is ToolCall => call !== null) : [];
}

function outputCallId(item: CanonicalItem): string | null {
  return (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') && typeof item.call_id === 'string' ? item.call_id : null;
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

function toToolCall(item: CanonicalItem): ToolCall | null {
  if (item.type === 'function_call' && typeof item.call_id === 'string' && typeof item.name === 'string') {
    return { callId: item.call_id, name: item.name, kind: 'function', input: typeof item.arguments === 'string' ? item.arguments : '{}', item, ...providerItemId(item) };
  }
  if (item.type === 'custom_tool_call' && typeof item.call_id === 'string' && typeof item.name === 'string') {
    return { callId: item.call_id, name: item.name, kind: 'custom', input: typeof item.input === 'string' ? item.input : '', item, ...providerItemId(item) };
  }
  return null;
}

/** A canonical item's own id as the provider gave it (OpenAI Responses items have one). */
function providerItemId(item: CanonicalItem): { itemId?: string } {
  return typeof item.id === 'string' && item.id !== '' ? { itemId: item.id } : {};
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
