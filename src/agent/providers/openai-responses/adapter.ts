/**
 * The OpenAI Responses dialect (`POST /v1/responses`, streamed), used statelessly: `store: false`,
 * the whole canonical context replayed as `input`, reasoning carried between steps as
 * `encrypted_content`. Output items are taken from `response.output_item.done` exactly as
 * received, because that copy is complete (the `.added` copy of a reasoning blob may be cut short)
 * and it is what the next request must replay.
 *
 * One call streams one response and stops at its terminal event; anything after it on the wire
 * is not read. On abort the stream throws `signal.reason`.
 */
import OpenAI from 'openai';
import type { ResponseCreateParamsStreaming, ResponseInput, Tool } from 'openai/resources/responses/responses';
import { isAbortError, providerErrorFromStreamPayload, streamEndedEarlyError, toProviderError } from '../provider-error.ts';
import { eventStreamPayloads } from '../stream-payloads.ts';
import { openAIPayloads } from './payloads.ts';
import { OPENAI_RATE_LIMITS } from './rate-limits.ts';
import { isAnthropicOnlyItem } from '../anthropic-messages/convert.ts';
import { postForStream } from '../stream-request.ts';
import type {
  CanonicalItem,
  Completion,
  ConnectionSettings,
  Effort,
  ModelRequest,
  ProviderAdapter,
  ProviderEvent,
  ToolKind,
  ToolSpec,
  Usage,
} from '../types.ts';

export interface OpenAIResponsesAdapterOptions {
  fetch?: typeof fetch;
}

/** Output item types that are calls the client must run, and the tool kind each one reports. */
const CALL_ITEM_KINDS: Record<string, ToolKind> = {
  function_call: 'function',
  custom_tool_call: 'custom',
  local_shell_call: 'function',
  computer_call: 'computer',
};

/** Names for call items that carry none of their own. */
const BUILT_IN_CALL_NAMES: Record<string, string> = { local_shell_call: 'local_shell', computer_call: 'computer' };

export function createOpenAIResponsesAdapter(
  connection: ConnectionSettings,
  options: OpenAIResponsesAdapterOptions = {},
): ProviderAdapter {
  const headers: Record<string, string> = connection.apiKey ? { authorization: `Bearer ${connection.apiKey}` } : {};
  const errorContext = { provider: connection.provider, apiKey: connection.apiKey, sdk: OpenAI, rateLimits: OPENAI_RATE_LIMITS };

  return {
    dialect: 'openai-responses',
    async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
      signal.throwIfAborted();
      const translator = new ResponseStreamTranslator(errorContext);
      try {
        // The POST the SDK's `responses.create` sends, its body written here (tools from their kept JSON).
        const response = await postForStream({ baseUrl: connection.baseUrl, path: '/responses', headers, body: responsesRequestJson({ ...request, input: request.input.filter(isResponsesReadable) }), signal }, OpenAI, options.fetch);
        // Read to the stream's end even after the final event: leaving early cancels the body and
        // drops a connection the next request could have used.
        for await (const batch of eventStreamPayloads(response.body, openAIPayloads(response))) {
          for (const event of batch) {
            if (!translator.finished) yield* translator.translate(event as StreamEvent);
          }
        }
        if (translator.finished) return;
      } catch (error) {
        if (signal.aborted) signal.throwIfAborted();
        if (isAbortError(error)) throw error;
        throw toProviderError(error, errorContext);
      }
      // A body that ends quietly because the request was aborted is a cancelled step, not a short one.
      signal.throwIfAborted();
      throw streamEndedEarlyError(connection.provider);
    },
  };
}

/**
 * Tool specs are made once and never change (src/runtime/context/compaction.ts measures them once too):
 * their JSON, most of every request body, is written once rather than on every step.
 */
const toolJson = new WeakMap<ToolSpec, string>();

/** buildResponsesRequest's body as JSON, the tools from their kept JSON. */
export function responsesRequestJson(request: ModelRequest): string {
  const body = JSON.stringify(buildResponsesRequest({ ...request, tools: [] }));
  if (request.tools.length === 0) return body;
  const tools = request.tools.map((spec) => {
    let json = toolJson.get(spec);
    if (json === undefined) toolJson.set(spec, (json = JSON.stringify(toResponsesTool(spec))));
    return json;
  });
  return `${body.slice(0, -1)},"tools":[${tools.join(',')}]}`;
}

/** The request body: stateless, reasoning requested encrypted, tools in Responses form. */
export function buildResponsesRequest(request: ModelRequest): ResponseCreateParamsStreaming {
  const body: ResponseCreateParamsStreaming = {
    model: request.transportModel,
    input: request.input as unknown as ResponseInput,
    stream: true,
    store: false,
  };
  if (request.instructions !== '') body.instructions = request.instructions;
  if (request.tools.length > 0) body.tools = request.tools.map(toResponsesTool);
  if (request.maxOutputTokens !== undefined) body.max_output_tokens = request.maxOutputTokens;
  // not strict: strict mode takes only a subset of JSON Schema, and agentd validates the answer itself
  if (request.outputFormat) body.text = { format: { type: 'json_schema', name: request.outputFormat.name, schema: request.outputFormat.schema, strict: false } };
  // A null effort marks a model without reasoning; such models reject the encrypted-reasoning include.
  if (request.effort !== null) body.include = ['reasoning.encrypted_content'];
  const effort = toReasoningEffort(request.effort);
  if (effort !== null) body.reasoning = { effort, summary: 'auto' };
  return body;
}

/**
 * `none` and null send no reasoning block. `xhigh` and `max` pass through: the API accepts both
 * (openai 6.x `ReasoningEffort`), and the model catalog decides which efforts a model offers.
 */
function toReasoningEffort(effort: Effort | null): Exclude<Effort, 'none'> | null {
  if (effort === null || effort === 'none') return null;
  return effort;
}

function toResponsesTool(tool: ToolSpec): Tool {
  if (tool.kind === 'custom') {
    return { type: 'custom', name: tool.name, description: tool.description, ...(tool.format ? { format: tool.format } : {}) };
  }
  return {
    type: 'function',
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters ?? { type: 'object', properties: {} },
    strict: false,
  };
}

type StreamEvent = { type: string; [key: string]: unknown };
type ErrorContext = { provider: string; apiKey: string | null };

/** Turns Responses stream events into ProviderEvents, one response at a time. */
class ResponseStreamTranslator {
  finished = false;
  private responseId = '';
  private model: string | null = null;
  private readonly callIdsByItem = new Map<string, string>();
  private readonly itemsWithArgumentDeltas = new Set<string>();
  private readonly emittedItemIds = new Set<string>();
  private webSearchCalls = 0;

  constructor(private readonly errorContext: ErrorContext) {}

  *translate(event: StreamEvent): Generator<ProviderEvent> {
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
        this.noteResponse(event.response);
        return;
      case 'response.output_item.added':
        yield* this.itemAdded(event);
        return;
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        if (typeof event.delta === 'string' && event.delta !== '') yield { type: 'text.delta', text: event.delta, ...itemIdOf(event.item_id) };
        return;
      case 'response.reasoning_summary_part.added':
        // Separate summary sections the way they are shown: as paragraphs.
        if (typeof event.summary_index === 'number' && event.summary_index > 0) yield { type: 'reasoning.delta', text: '\n\n', ...itemIdOf(event.item_id) };
        return;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        if (typeof event.delta === 'string' && event.delta !== '') yield { type: 'reasoning.delta', text: event.delta, ...itemIdOf(event.item_id) };
        return;
      case 'response.function_call_arguments.delta':
      case 'response.custom_tool_call_input.delta':
        yield* this.argumentsDelta(event, event.delta);
        return;
      case 'response.function_call_arguments.done':
      case 'response.custom_tool_call_input.done':
        // Some servers (LM Studio) send the arguments only here, with no deltas before.
        if (!this.itemsWithArgumentDeltas.has(itemKey(event))) {
          yield* this.argumentsDelta(event, event.type.endsWith('arguments.done') ? event.arguments : event.input);
        }
        return;
      case 'response.output_item.done':
        yield* this.itemDone(event.item);
        return;
      case 'response.completed':
      case 'response.incomplete':
        yield* this.finish(event.response);
        return;
      case 'response.failed':
        this.finished = true;
        throw providerErrorFromStreamPayload(this.errorContext, recordOrEmpty(recordOrEmpty(event.response).error));
      case 'error':
        this.finished = true;
        throw providerErrorFromStreamPayload(this.errorContext, event);
      default:
        return; // new event types appear often; anything unknown carries nothing we need
    }
  }

  private noteResponse(response: unknown): void {
    const fields = recordOrEmpty(response);
    if (typeof fields.id === 'string') this.responseId = fields.id;
    if (typeof fields.model === 'string') this.model = fields.model;
  }

  private *itemAdded(event: StreamEvent): Generator<ProviderEvent> {
    const item = recordOrEmpty(event.item);
    const itemType = String(item.type);
    const kind = CALL_ITEM_KINDS[itemType];
    if (!kind) return;
    const callId = typeof item.call_id === 'string' ? item.call_id : String(item.id ?? '');
    const name = typeof item.name === 'string' ? item.name : (BUILT_IN_CALL_NAMES[itemType] ?? itemType);
    this.callIdsByItem.set(itemKey({ item_id: item.id, output_index: event.output_index }), callId);
    if (typeof item.id === 'string') this.callIdsByItem.set(item.id, callId);
    yield { type: 'tool.started', callId, name, kind, ...itemIdOf(item.id) };
  }

  private *argumentsDelta(event: StreamEvent, delta: unknown): Generator<ProviderEvent> {
    if (typeof delta !== 'string' || delta === '') return;
    const key = itemKey(event);
    const callId = this.callIdsByItem.get(key) ?? this.callIdsByItem.get(String(event.item_id));
    if (callId === undefined) return;
    this.itemsWithArgumentDeltas.add(key);
    yield { type: 'tool.arguments.delta', callId, delta };
  }

  private *itemDone(rawItem: unknown): Generator<ProviderEvent> {
    if (!isCanonicalItem(rawItem)) return;
    if (typeof rawItem.id === 'string') this.emittedItemIds.add(rawItem.id);
    if (rawItem.type === 'web_search_call') this.webSearchCalls += 1;
    yield { type: 'item.done', item: rawItem };
  }

  private *finish(rawResponse: unknown): Generator<ProviderEvent> {
    this.finished = true;
    const response = recordOrEmpty(rawResponse);
    this.noteResponse(response);
    // Items the stream never finished individually are still part of the response's output.
    for (const item of Array.isArray(response.output) ? response.output : []) {
      if (isCanonicalItem(item) && typeof item.id === 'string' && !this.emittedItemIds.has(item.id)) yield* this.itemDone(item);
    }
    const status = typeof response.status === 'string' ? response.status : null;
    const completion: Completion =
      status === 'incomplete'
        ? { status: 'incomplete', reason: String(recordOrEmpty(response.incomplete_details).reason ?? 'unknown') }
        : { status: 'completed' };
    yield {
      type: 'response.done',
      responseId: this.responseId,
      model: this.model,
      usage: toUsage(response.usage, this.webSearchCalls),
      completion,
      stopReason: status,
    };
  }
}

function toUsage(raw: unknown, webSearchCalls: number): Usage | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const usage = raw as Record<string, unknown>;
  const inputDetails = recordOrEmpty(usage.input_tokens_details);
  const outputDetails = recordOrEmpty(usage.output_tokens_details);
  return {
    inputTokens: numberOr(usage.input_tokens, 0),
    outputTokens: numberOr(usage.output_tokens, 0),
    cachedTokens: numberOr(inputDetails.cached_tokens, 0),
    cacheCreationTokens: numberOr(inputDetails.cache_write_tokens, null),
    reasoningTokens: numberOr(outputDetails.reasoning_tokens, null),
    webSearchRequests: webSearchCalls > 0 ? webSearchCalls : null,
  };
}

function itemKey(event: Record<string, unknown>): string {
  return typeof event.item_id === 'string' ? event.item_id : `#${String(event.output_index)}`;
}

function isCanonicalItem(value: unknown): value is CanonicalItem {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

function recordOrEmpty(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function numberOr<T extends number | null>(value: unknown, fallback: T): number | T {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** Responses reasoning items never carry `provider`; a marked one came from another dialect, and is left out. */
export function isResponsesReadable(item: CanonicalItem): boolean {
  if (isAnthropicOnlyItem(item)) return false;
  return !(item.type === 'reasoning' && typeof item.provider === 'string');
}

/** The item id a stream event names, as the optional field of a ProviderEvent. */
function itemIdOf(id: unknown): { itemId?: string } {
  return typeof id === 'string' && id !== '' ? { itemId: id } : {};
}
