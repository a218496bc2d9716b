/**
 * The Anthropic Messages adapter (`POST /v1/messages`, streaming), with the official SDK's request
 * and event types and its errors (sent by stream-request.ts, read by stream-payloads.ts).
 *
 * Nothing is retried here: the runtime decides from the ProviderError. The stream is complete once
 * `message_delta` brought a stop reason; `message_stop` is not required because a final event that
 * lacks its closing blank line is dropped (as the SDK drops it).
 */
import Anthropic from '@anthropic-ai/sdk';
import { AssistantBlockAssembler, canonicalToAnthropic, type AnthropicBlock } from './convert.ts';
import { customToolParameters } from '../openai-chat/convert.ts';
import { readPayloadStream, type PayloadStreamReader } from '../payload-stream.ts';
import { eventStreamPayloads } from '../stream-payloads.ts';
import { anthropicPayloads } from './payloads.ts';
import { ANTHROPIC_RATE_LIMITS } from './rate-limits.ts';
import { postForStream } from '../stream-request.ts';
import type { Completion, ConnectionSettings, Effort, ModelRequest, ProviderAdapter, ProviderEvent, ToolKind, Usage } from '../types.ts';

export interface AnthropicAdapterOptions {
  fetch?: typeof fetch;
}

/** Thinking budget per effort; none/null disables thinking. */
export const THINKING_BUDGET: Record<Exclude<Effort, 'none'>, number> = { low: 2048, medium: 8192, high: 16384, xhigh: 32000, max: 32000 };
const MIN_THINKING_BUDGET = 1024;
/** Answer room added on top of the thinking budget when the caller set no output limit. */
const DEFAULT_ANSWER_TOKENS = 8192;
/** The API version the request and event types are written for (the SDK's own default). */
const ANTHROPIC_VERSION = '2023-06-01';

export function createAnthropicMessagesAdapter(connection: ConnectionSettings, options: AnthropicAdapterOptions = {}): ProviderAdapter {
  // Only the connection's own key is sent: never an ANTHROPIC_* key or credential file, and none at all when keyless.
  const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
  if (connection.apiKey) headers['x-api-key'] = connection.apiKey;
  const baseUrl = anthropicBaseUrl(connection.baseUrl);
  return {
    dialect: 'anthropic-messages',
    stream: (request, signal) => streamMessage(connection, { baseUrl, headers }, request, signal, options.fetch),
  };
}

/** The path is /v1/messages (as the SDK has it), so a configured ".../v1" base would double it. */
export function anthropicBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

export function buildAnthropicRequest(request: ModelRequest): Anthropic.MessageCreateParamsStreaming {
  const customToolNames = new Set(request.tools.filter((tool) => tool.kind === 'custom').map((tool) => tool.name));
  const messages = canonicalToAnthropic(request.input, { customToolNames, cacheBreakpointBeforeNewInput: true });
  const tools: Anthropic.Tool[] = request.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: (tool.kind === 'custom' ? customToolParameters(tool) : tool.parameters ?? { type: 'object', properties: {} }) as Anthropic.Tool.InputSchema,
  }));
  if (tools.length > 0) tools[tools.length - 1].cache_control = { type: 'ephemeral' };

  let budget = request.effort && request.effort !== 'none' ? THINKING_BUDGET[request.effort] : 0;
  if (budget > 0 && continuesToolLoopWithoutThinking(messages)) budget = 0;
  const maxTokens = request.maxOutputTokens ?? budget + DEFAULT_ANSWER_TOKENS;
  // max_tokens must exceed the budget: shrink the budget to leave room for an answer.
  budget = Math.min(budget, maxTokens - MIN_THINKING_BUDGET);

  const params: Anthropic.MessageCreateParamsStreaming = { model: request.transportModel, max_tokens: maxTokens, messages, stream: true };
  if (request.instructions !== '') params.system = [{ type: 'text', text: request.instructions, cache_control: { type: 'ephemeral' } }];
  if (tools.length > 0) params.tools = tools;
  // the SDK's native structured output (output_config.format), not the older forced-tool pattern
  if (request.outputFormat) params.output_config = { format: { type: 'json_schema', schema: request.outputFormat.schema } };
  if (budget >= MIN_THINKING_BUDGET) params.thinking = { type: 'enabled', budget_tokens: budget };
  return params;
}

/**
 * With thinking on, a tool loop's last assistant turn must begin with a thinking block. History
 * written by another dialect has none, so that step runs without thinking instead of failing.
 */
function continuesToolLoopWithoutThinking(messages: Anthropic.MessageParam[]): boolean {
  const last = messages[messages.length - 1];
  const previous = messages[messages.length - 2];
  if (!last || last.role !== 'user' || typeof last.content === 'string') return false;
  if (!last.content.some((block) => block.type === 'tool_result')) return false;
  if (!previous || previous.role !== 'assistant' || typeof previous.content === 'string') return false;
  const first = previous.content[0];
  return !first || (first.type !== 'thinking' && first.type !== 'redacted_thinking');
}

/** Maps stop_reason to the completion; max_tokens keeps Anthropic's own name as the reason. */
export function anthropicCompletion(stopReason: string | null): Completion {
  switch (stopReason) {
    case 'max_tokens':
      return { status: 'incomplete', reason: 'max_tokens' };
    case 'model_context_window_exceeded':
      return { status: 'incomplete', reason: 'context_window_exceeded' };
    case 'refusal':
    case 'pause_turn':
      return { status: 'incomplete', reason: stopReason };
    default:
      return { status: 'completed' };
  }
}

async function* streamMessage(
  connection: ConnectionSettings,
  target: { baseUrl: string; headers: Record<string, string> },
  request: ModelRequest,
  signal: AbortSignal,
  fetchImpl: typeof fetch | undefined,
): AsyncGenerator<ProviderEvent> {
  const open = async () => {
    const body = JSON.stringify(buildAnthropicRequest(request));
    const response = await postForStream({ ...target, path: '/v1/messages', body, signal }, Anthropic, fetchImpl);
    return eventStreamPayloads(response.body, anthropicPayloads(response)) as AsyncIterable<StreamEvent[]>;
  };
  yield* readPayloadStream(open, new MessageStreamReader(request), { provider: connection.provider, apiKey: connection.apiKey, sdk: Anthropic, rateLimits: ANTHROPIC_RATE_LIMITS }, signal);
}

interface OpenBlock {
  block: AnthropicBlock;
  json: string;
}

type StreamEvent = Anthropic.RawMessageStreamEvent;
type StreamUsage = Partial<Anthropic.MessageDeltaUsage> | Anthropic.Usage;

/** Turns SDK stream events into provider events, keeping every content block in its final form. */
class MessageStreamReader implements PayloadStreamReader<StreamEvent> {
  stopReason: string | null = null;

  ended(): boolean {
    return this.stopReason !== null;
  }
  private responseId = '';
  private model: string | null = null;
  private readonly open = new Map<number, OpenBlock>();
  private readonly assembler: AssistantBlockAssembler;
  private readonly customToolNames: ReadonlySet<string>;
  private readonly usage = { input: null as number | null, output: null as number | null, cacheRead: null as number | null, cacheWrite: null as number | null, thinking: null as number | null, webSearches: null as number | null };

  constructor(request: ModelRequest) {
    this.customToolNames = new Set(request.tools.filter((tool) => tool.kind === 'custom').map((tool) => tool.name));
    this.assembler = new AssistantBlockAssembler(this.customToolNames);
  }

  *read(event: StreamEvent): Generator<ProviderEvent> {
    switch (event.type) {
      case 'message_start':
        this.responseId = event.message.id;
        this.model = event.message.model;
        this.absorbUsage(event.message.usage);
        break;
      case 'content_block_start': {
        const block = { ...(event.content_block as unknown as AnthropicBlock) };
        this.open.set(event.index, { block, json: '' });
        if (block.type === 'tool_use') {
          yield { type: 'tool.started', callId: String(block.id), name: String(block.name), kind: this.kindOf(block) };
        }
        break;
      }
      case 'content_block_delta':
        yield* this.applyDelta(event.index, event.delta);
        break;
      case 'content_block_stop': {
        const entry = this.open.get(event.index);
        this.open.delete(event.index);
        if (entry) yield* this.itemsDone(this.assembler.add(finalBlock(entry)));
        break;
      }
      case 'message_delta':
        this.stopReason = event.delta.stop_reason ?? 'unknown';
        this.absorbUsage(event.usage);
        break;
    }
  }

  /** Blocks still open at the end were cut off: text is kept, tool input and unsigned thinking are not. */
  *finish(): Generator<ProviderEvent> {
    const unfinished = [...this.open.entries()].sort(([a], [b]) => a - b).map(([, entry]) => entry.block);
    for (const block of unfinished) {
      if (block.type === 'text' || (block.type === 'thinking' && block.signature)) yield* this.itemsDone(this.assembler.add(block));
    }
    yield* this.itemsDone(this.assembler.finish());
    yield {
      type: 'response.done',
      responseId: this.responseId,
      model: this.model,
      usage: this.totalUsage(),
      completion: anthropicCompletion(this.stopReason),
      stopReason: this.stopReason,
    };
  }

  private *applyDelta(index: number, delta: Anthropic.RawContentBlockDelta): Generator<ProviderEvent> {
    const entry = this.open.get(index);
    if (!entry) return;
    const block = entry.block;
    switch (delta.type) {
      case 'text_delta':
        block.text = String(block.text ?? '') + delta.text;
        if (delta.text !== '') yield { type: 'text.delta', text: delta.text };
        break;
      case 'thinking_delta':
        block.thinking = String(block.thinking ?? '') + delta.thinking;
        if (delta.thinking !== '') yield { type: 'reasoning.delta', text: delta.thinking };
        break;
      case 'signature_delta':
        block.signature = delta.signature;
        break;
      case 'citations_delta':
        block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation];
        break;
      case 'input_json_delta':
        entry.json += delta.partial_json;
        // Custom tools take free text; their JSON wrapper is not worth streaming.
        if (block.type === 'tool_use' && delta.partial_json !== '' && this.kindOf(block) === 'function') {
          yield { type: 'tool.arguments.delta', callId: String(block.id), delta: delta.partial_json };
        }
        break;
    }
  }

  private *itemsDone(items: ReturnType<AssistantBlockAssembler['add']>): Generator<ProviderEvent> {
    for (const item of items) yield { type: 'item.done', item };
  }

  private kindOf(block: AnthropicBlock): ToolKind {
    return this.customToolNames.has(String(block.name)) ? 'custom' : 'function';
  }

  /** message_delta repeats (newer) or omits (older) the input counts: take each when present. */
  private absorbUsage(usage: StreamUsage | null | undefined): void {
    if (!usage) return;
    const pick = (value: number | null | undefined, previous: number | null) => (typeof value === 'number' ? value : previous);
    this.usage.input = pick(usage.input_tokens, this.usage.input);
    this.usage.output = pick(usage.output_tokens, this.usage.output);
    this.usage.cacheRead = pick(usage.cache_read_input_tokens, this.usage.cacheRead);
    this.usage.cacheWrite = pick(usage.cache_creation_input_tokens, this.usage.cacheWrite);
    this.usage.webSearches = pick(usage.server_tool_use?.web_search_requests, this.usage.webSearches);
    const details = 'output_tokens_details' in usage ? usage.output_tokens_details : null;
    this.usage.thinking = pick(details?.thinking_tokens, this.usage.thinking);
  }

  /**
   * Anthropic's input_tokens excludes cache reads and writes; inputTokens here is the whole
   * prompt (input + cache read + cache write) so that, as with OpenAI, cachedTokens is a part of it.
   */
  private totalUsage(): Usage | null {
    const { input, output, cacheRead, cacheWrite } = this.usage;
    if (input === null && output === null) return null;
    return {
      inputTokens: (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0),
      outputTokens: output ?? 0,
      cachedTokens: cacheRead ?? 0,
      cacheCreationTokens: cacheWrite,
      reasoningTokens: this.usage.thinking,
      webSearchRequests: this.usage.webSearches,
    };
  }
}

/** Tool input arrives as JSON fragments; an empty total means no arguments. */
function finalBlock(entry: OpenBlock): AnthropicBlock {
  const { block, json } = entry;
  if (block.type !== 'tool_use' && block.type !== 'server_tool_use') return block;
  if (json.trim() === '') return { ...block, input: typeof block.input === 'object' && block.input !== null ? block.input : {} };
  try {
    return { ...block, input: JSON.parse(json) };
  } catch {
    // Invalid JSON from the model: a client tool reports it back; a server block cannot keep it.
    return { ...block, input: block.type === 'tool_use' ? json : {} };
  }
}
