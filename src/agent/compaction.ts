import { runModelStep, StepFailure, type RetryPolicy, type StepListener, type StepResult } from './model-step.ts';
import { assistantTextOf } from './loop.ts';
import type { CanonicalItem, ProviderAdapter, ToolSpec } from './providers/types.ts';

/*
 * Compaction: the model summarises its own context so a session can go on inside the model's
 * context window. The summary becomes the whole new context, as one user-role message:
 *
 *   { type: 'message', role: 'user', content: [{ type: 'input_text', text: SUMMARY_PREFIX + summary }] }
 *
 * A user message is understood by every dialect and never mistaken for the model's own words.
 */

export const COMPACT_COMMAND = '/compact';
export const CLEAR_COMMAND = '/clear';

/** A request is compacted when its estimate passes this share of the window; the rest is for the reply and the estimate's error. */
const CONTEXT_FILL_LIMIT = 0.8;
/** What an inline image counts for, whatever the length of its base64 data. */
export const IMAGE_TOKEN_ESTIMATE = 1_000;

export const SUMMARY_PREFIX = 'Summary of the conversation so far (the earlier context was compacted):\n\n';

export const SUMMARY_INSTRUCTIONS = [
  'You compact the context of a coding agent so the work can continue in a fresh, shorter context.',
  'Write a summary the agent can continue from without the original messages: the user\'s goals and constraints,',
  'decisions made, files read or changed and their current state, commands run and results that still matter,',
  'open problems, and the next steps. Keep exact names, paths, identifiers and values. Be concise.',
  'Reply with the summary only. Do not call tools.',
].join('\n');

const SUMMARY_REQUEST = 'Summarise the conversation above as instructed, so the work can continue from your summary alone.';

/**
 * A cheap token estimate: a quarter of the JSON length, with inline image data counted as a fixed
 * amount. Good enough to decide when to compact; never used for billing.
 */
export function estimateTokens(value: unknown): number {
  return tokensOf(measureJson(value));
}

/** What the estimate counts of a value's JSON: its length with inline image data left out, and those images. */
export interface JsonMeasure {
  chars: number;
  images: number;
  /** the characters of image data left out of `chars` (what the value really weighs is both) */
  imageChars: number;
}

export function measureJson(value: unknown): JsonMeasure {
  let images = 0;
  let imageChars = 0;
  const json = JSON.stringify(value, (_key, field: unknown) => {
    if (typeof field === 'string' && field.length > 256 && field.startsWith('data:')) {
      images++;
      imageChars += field.length;
      return '';
    }
    return field;
  });
  return { chars: json?.length ?? 0, images, imageChars };
}

export function tokensOf(measure: JsonMeasure): number {
  return Math.ceil(measure.chars / 4) + measure.images * IMAGE_TOKEN_ESTIMATE;
}

/**
 * The measure of a JSON array from the sum of its `count` items' measures: two brackets and a
 * comma between items, so an array is measured without stringifying it again.
 */
export function arrayMeasure(count: number, items: JsonMeasure): JsonMeasure {
  return { ...items, chars: items.chars + Math.max(count - 1, 0) + 2 };
}

/** The number of tokens a request may be estimated at before it no longer fits; null = no limit. */
export function contextBudget(contextWindow: number | null): number | null {
  return contextWindow === null ? null : Math.floor(contextWindow * CONTEXT_FILL_LIMIT);
}

export function summaryContextItem(summary: string): CanonicalItem {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text: SUMMARY_PREFIX + summary }] };
}

/**
 * The newest items whose estimate fits in `maxTokens`, starting at a user message so no tool
 * output or reasoning item is cut off from the call or answer it belongs to. When no user message
 * starts a part that fits, the part that fits is kept without its leading tool outputs and
 * reasoning, and at least the newest item is kept.
 */
export function newestThatFit(items: CanonicalItem[], maxTokens: number): CanonicalItem[] {
  let start = items.length;
  let used = 0;
  while (start > 0) {
    const cost = estimateTokens(items[start - 1]);
    if (used + cost > maxTokens) break;
    used += cost;
    start--;
  }
  const userMessage = items.findIndex((item, index) => index >= start && item.type === 'message' && item.role === 'user');
  if (userMessage >= 0) return items.slice(userMessage);
  let from = Math.min(start, items.length - 1);
  while (from < items.length - 1 && dependsOnEarlierItem(items[from])) from++;
  return items.slice(Math.max(from, 0));
}

export interface SummaryOptions {
  adapter: ProviderAdapter;
  transportModel: string;
  /** the turn's tools: offered only when the context holds tool calls (Anthropic refuses such a request without tools) */
  tools: ToolSpec[];
  maxOutputTokens?: number;
  contextWindow: number | null;
  context: CanonicalItem[];
  listener: StepListener;
  signal: AbortSignal;
  /** the turn's retry policy, so `--model-stall-timeout` bounds the summary as it bounds the answer */
  retry?: RetryPolicy;
}

export interface Summary {
  text: string;
  step: StepResult;
}

/**
 * Asks the model for a summary of `context`: one model step told not to call tools, offered none
 * unless the context holds tool calls (which some providers only accept alongside tool
 * definitions). When the context itself is too large for the window, the newest part that fits
 * is summarised. A tool call the model makes anyway is ignored; its text is the summary.
 */
export async function summarizeContext(options: SummaryOptions): Promise<Summary> {
  const request: CanonicalItem = { type: 'message', role: 'user', content: [{ type: 'input_text', text: SUMMARY_REQUEST }] };
  const budget = contextBudget(options.contextWindow);
  const room = budget === null ? null : budget - estimateTokens(SUMMARY_INSTRUCTIONS) - estimateTokens(request);
  const input = room === null ? options.context : newestThatFit(options.context, Math.max(room, 0));
  const step = await runModelStep(
    options.adapter,
    {
      transportModel: options.transportModel,
      instructions: SUMMARY_INSTRUCTIONS,
      input: [...input, request],
      tools: input.some(isToolItem) ? options.tools : [],
      effort: null,
      maxOutputTokens: options.maxOutputTokens,
    },
    options.listener,
    options.signal,
    options.retry,
  ).catch((error: unknown) => {
    // The partial text of a failed summary is nobody's output: only the cause matters.
    throw error instanceof StepFailure ? error.cause : error;
  });
  const text = (assistantTextOf(step.items) ?? '').trim();
  if (!text) throw new Error('the model returned an empty summary, so the context was kept');
  return { text, step };
}

function isToolItem(item: CanonicalItem): boolean {
  return item.type.endsWith('_call') || item.type.endsWith('_output');
}

function dependsOnEarlierItem(item: CanonicalItem): boolean {
  return item.type.endsWith('_output') || item.type === 'reasoning';
}
