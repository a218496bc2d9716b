/**
 * The Chat Completions adapter for OpenAI-compatible servers (Ollama, vLLM, llama.cpp, Groq,
 * DeepSeek, OpenRouter, …) with the official `openai` SDK's types and errors, streaming with
 * include_usage (sent by stream-request.ts, read by stream-payloads.ts).
 *
 * The stream is complete once a choice reported its finish_reason; `[DONE]` is optional.
 * Output items are emitted after the stream, in the order reasoning, message, tool calls.
 */
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { canonicalToChatMessages, chatTools } from './convert.ts';
import { readPayloadStream, type PayloadStreamReader } from '../payload-stream.ts';
import { eventStreamPayloads } from '../stream-payloads.ts';
import { openAIPayloads } from '../openai-responses/payloads.ts';
import { OPENAI_RATE_LIMITS } from '../openai-responses/rate-limits.ts';
import { postForStream } from '../stream-request.ts';
import type { CanonicalItem, Completion, ConnectionSettings, ModelRequest, ProviderAdapter, ProviderEvent, Usage } from '../types.ts';

export interface OpenAIChatAdapterOptions {
  fetch?: typeof fetch;
}

/** Marks reasoning items written by this dialect: plain text that no other dialect can replay. */
export const CHAT_ORIGIN = 'openai-chat';

export function createOpenAIChatAdapter(connection: ConnectionSettings, options: OpenAIChatAdapterOptions = {}): ProviderAdapter {
  // Only the connection's own key is sent: never an OPENAI_* key from the environment, and none at all when keyless.
  const headers: Record<string, string> = connection.apiKey ? { authorization: `Bearer ${connection.apiKey}` } : {};
  return {
    dialect: 'openai-chat',
    stream: (request, signal) => streamChat(connection, headers, request, signal, options.fetch),
  };
}

export function buildChatRequest(request: ModelRequest, provider: string): OpenAI.Chat.ChatCompletionCreateParamsStreaming {
  const params: OpenAI.Chat.ChatCompletionCreateParamsStreaming = {
    model: request.transportModel,
    messages: canonicalToChatMessages(request.instructions, request.input),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) params.tools = chatTools(request.tools);
  if (request.outputFormat) params.response_format = { type: 'json_schema', json_schema: { name: request.outputFormat.name, schema: request.outputFormat.schema, strict: false } };
  // Compatible servers know low/medium/high only; stronger efforts ask for the most they have.
  if (request.effort === 'low' || request.effort === 'medium' || request.effort === 'high') params.reasoning_effort = request.effort;
  if (request.effort === 'xhigh' || request.effort === 'max') params.reasoning_effort = 'high';
  // OpenAI's reasoning models reject max_tokens; most compatible servers only know max_tokens.
  if (request.maxOutputTokens !== undefined) {
    if (provider === 'openai') params.max_completion_tokens = request.maxOutputTokens;
    else params.max_tokens = request.maxOutputTokens;
  }
  return params;
}

/** finish_reason `length` is reported as incomplete with reason `max_tokens`, as on Anthropic. */
export function chatCompletion(finishReason: string | null): Completion {
  if (finishReason === 'length') return { status: 'incomplete', reason: 'max_tokens' };
  if (finishReason === 'content_filter') return { status: 'incomplete', reason: 'content_filter' };
  return { status: 'completed' };
}

async function* streamChat(
  connection: ConnectionSettings,
  headers: Record<string, string>,
  request: ModelRequest,
  signal: AbortSignal,
  fetchImpl: typeof fetch | undefined,
): AsyncGenerator<ProviderEvent> {
  const open = async () => {
    const body = JSON.stringify(buildChatRequest(request, connection.provider));
    const response = await postForStream({ baseUrl: connection.baseUrl, path: '/chat/completions', headers, body, signal }, OpenAI, fetchImpl);
    // the chunks are read through ChatChunk, which adds the fields compatible servers send
    return eventStreamPayloads(response.body, openAIPayloads(response)) as AsyncIterable<ChatChunk[]>;
  };
  yield* readPayloadStream(open, new ChatStreamReader(request), { provider: connection.provider, apiKey: connection.apiKey, sdk: OpenAI, rateLimits: OPENAI_RATE_LIMITS }, signal);
}

/** The chunk fields we read, including the non-standard ones compatible servers add. */
interface ChatChunk {
  id?: string;
  model?: string;
  choices?: Array<{ index?: number; delta?: ChatDelta | null; finish_reason?: string | null }>;
  usage?: ChatUsage | null;
  x_groq?: { usage?: ChatUsage | null } | null;
}

interface ChatDelta {
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: Array<{ index?: number; id?: string | null; function?: { name?: string | null; arguments?: string | null } | null }> | null;
}

interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  /** DeepSeek's name for cached prompt tokens */
  prompt_cache_hit_tokens?: number | null;
}

interface ToolCallState {
  callId: string;
  name: string;
  arguments: string;
  started: boolean;
}

class ChatStreamReader implements PayloadStreamReader<ChatChunk> {
  finishReason: string | null = null;

  ended(): boolean {
    return this.finishReason !== null;
  }
  private responseId = '';
  private model: string | null = null;
  private usage: ChatUsage | null = null;
  private text = '';
  private reasoning = '';
  private readonly toolCalls = new Map<number, ToolCallState>();
  private readonly customToolNames: ReadonlySet<string>;

  constructor(request: ModelRequest) {
    this.customToolNames = new Set(request.tools.filter((tool) => tool.kind === 'custom').map((tool) => tool.name));
  }

  *read(chunk: ChatChunk): Generator<ProviderEvent> {
    if (!this.responseId && chunk.id) this.responseId = chunk.id;
    if (!this.model && chunk.model) this.model = chunk.model;
    const usage = chunk.usage ?? chunk.x_groq?.usage;
    if (usage) this.usage = usage;
    const choice = chunk.choices?.find((candidate) => (candidate.index ?? 0) === 0);
    if (!choice) return;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '') {
      this.reasoning += reasoning;
      yield { type: 'reasoning.delta', text: reasoning };
    }
    if (typeof delta.content === 'string' && delta.content !== '') {
      this.text += delta.content;
      yield { type: 'text.delta', text: delta.content };
    }
    for (const [position, fragment] of (delta.tool_calls ?? []).entries()) {
      yield* this.applyToolFragment(fragment.index ?? position, fragment);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  *finish(): Generator<ProviderEvent> {
    for (const item of this.items()) yield { type: 'item.done', item };
    yield {
      type: 'response.done',
      responseId: this.responseId || `chatcmpl_${randomUUID()}`,
      model: this.model,
      usage: this.totalUsage(),
      completion: chatCompletion(this.finishReason),
      stopReason: this.finishReason,
    };
  }

  /** id and name come with a call's first fragment (or all at once, as Ollama and Groq send). */
  private *applyToolFragment(index: number, fragment: NonNullable<ChatDelta['tool_calls']>[number]): Generator<ProviderEvent> {
    let call = this.toolCalls.get(index);
    if (!call) {
      call = { callId: '', name: '', arguments: '', started: false };
      this.toolCalls.set(index, call);
    }
    // Some servers repeat id and name on every fragment: the first ones win.
    if (!call.started && fragment.id) call.callId = fragment.id;
    if (call.name === '' && fragment.function?.name) call.name = fragment.function.name;
    const piece = fragment.function?.arguments ?? '';
    call.arguments += piece;
    if (!call.started && call.name !== '') {
      call.started = true;
      call.callId ||= generatedCallId();
      yield { type: 'tool.started', callId: call.callId, name: call.name, kind: this.customToolNames.has(call.name) ? 'custom' : 'function' };
      // Arguments that arrived before the name are sent now, in one piece.
      if (call.arguments !== '') yield { type: 'tool.arguments.delta', callId: call.callId, delta: call.arguments };
    } else if (call.started && piece !== '') {
      yield { type: 'tool.arguments.delta', callId: call.callId, delta: piece };
    }
  }

  private items(): CanonicalItem[] {
    const items: CanonicalItem[] = [];
    if (this.reasoning !== '') {
      items.push({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: this.reasoning }], provider: CHAT_ORIGIN });
    }
    if (this.text !== '') items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: this.text, annotations: [] }] });
    const calls = [...this.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    for (const call of calls) call.callId ||= generatedCallId();
    for (const call of calls) {
      if (call.name === '') continue; // nothing could run it
      if (this.customToolNames.has(call.name)) {
        items.push({ type: 'custom_tool_call', call_id: call.callId, name: call.name, input: customToolInput(call.arguments) });
      } else {
        items.push({ type: 'function_call', call_id: call.callId, name: call.name, arguments: call.arguments.trim() === '' ? '{}' : call.arguments });
      }
    }
    return items;
  }

  private totalUsage(): Usage | null {
    const usage = this.usage;
    if (!usage) return null;
    return {
      inputTokens: usage.prompt_tokens ?? 0,
      outputTokens: usage.completion_tokens ?? 0,
      cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0,
      cacheCreationTokens: null,
      reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? null,
      webSearchRequests: null,
    };
  }
}

/** A custom tool's call arrives as `{"input": "…"}`; anything else is passed on as raw text. */
function customToolInput(argumentsJson: string): string {
  try {
    const parsed: unknown = JSON.parse(argumentsJson);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { input?: unknown }).input === 'string') {
      return (parsed as { input: string }).input;
    }
  } catch {
    // not JSON: the model wrote the text directly
  }
  return argumentsJson;
}

function generatedCallId(): string {
  return `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
}
