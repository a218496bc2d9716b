/**
 * SSE frames in each dialect's real wire format (see test/fixtures/provider-fixtures/WIRE-FORMATS.md),
 * generated from a scripted reply. Used by fake-provider.ts; pure functions, no I/O.
 */
export type WireDialect = 'openai-responses' | 'anthropic-messages' | 'openai-chat';

interface ScriptedToolCall {
  name: string;
  /** JSON text for function tools; free text for custom tools (Responses only). */
  arguments: string;
  callId?: string;
  kind?: 'function' | 'custom';
}

export interface ScriptedReply {
  text?: string;
  reasoning?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: { input: number; output: number; cached?: number; reasoning?: number };
  stop?: 'end' | 'max_tokens';
}

export interface WireContext {
  /** the `model` the client asked for, echoed back */
  model: string;
  /** unique per reply; every id in the reply is derived from it */
  id: string;
  /** Responses: the request asked for `include: ["reasoning.encrypted_content"]` */
  encryptedReasoning: boolean;
  /** Chat: the request asked for `stream_options.include_usage` */
  includeUsage: boolean;
}

export interface ScriptedError {
  code?: string;
  message?: string;
}

export const DEFAULT_REPLY_TEXT = 'Hello from the fake provider.';
const DEFAULT_USAGE = { input: 10, output: 5, cached: 0, reasoning: 0 };
const CREATED_AT = 1_760_000_000;

/** Pieces the way models stream text: a word and its trailing space at a time. */
function splitIntoDeltas(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/g) ?? [];
}

/** Fake but stable opaque blobs, so tests can check they are carried back unchanged. */
export function fakeEncryptedReasoning(id: string): string {
  return `gAAAAB-fake-${Buffer.from(id).toString('base64')}`;
}
export function fakeThinkingSignature(id: string): string {
  return `EqQB-fake-signature-${Buffer.from(id).toString('base64')}`;
}

function frame(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

function withDefaults(reply: ScriptedReply) {
  const toolCalls = reply.toolCalls ?? [];
  const text = reply.text ?? (toolCalls.length === 0 && reply.reasoning === undefined ? DEFAULT_REPLY_TEXT : '');
  return { text, toolCalls, reasoning: reply.reasoning, usage: { ...DEFAULT_USAGE, ...reply.usage }, stop: reply.stop ?? 'end' };
}

// ---------------------------------------------------------------- OpenAI Responses

class ResponsesFrames {
  readonly frames: string[] = [];
  private sequence = 0;
  constructor(private readonly context: WireContext) {}

  emit(type: string, fields: Record<string, unknown>): void {
    this.frames.push(frame({ type, sequence_number: this.sequence++, ...fields }, type));
  }

  response(status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      id: `resp_${this.context.id}`, object: 'response', created_at: CREATED_AT, status, error: null, incomplete_details: null,
      model: this.context.model, output: [], store: false, usage: null, ...extra,
    };
  }

  start(): void {
    this.emit('response.created', { response: this.response('in_progress') });
    this.emit('response.in_progress', { response: this.response('in_progress') });
  }

  /** A message item opened and its text streamed, without closing it (for partial streams). */
  openMessage(outputIndex: number, text: string): string {
    const itemId = `msg_${this.context.id}_${outputIndex}`;
    this.emit('response.output_item.added', { output_index: outputIndex, item: { id: itemId, type: 'message', status: 'in_progress', content: [], role: 'assistant' } });
    this.emit('response.content_part.added', { item_id: itemId, output_index: outputIndex, content_index: 0, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } });
    for (const delta of splitIntoDeltas(text)) {
      this.emit('response.output_text.delta', { item_id: itemId, output_index: outputIndex, content_index: 0, delta, logprobs: [] });
    }
    return itemId;
  }

  message(outputIndex: number, text: string): Record<string, unknown> {
    const itemId = this.openMessage(outputIndex, text);
    const part = { type: 'output_text', annotations: [], logprobs: [], text };
    this.emit('response.output_text.done', { item_id: itemId, output_index: outputIndex, content_index: 0, text, logprobs: [] });
    this.emit('response.content_part.done', { item_id: itemId, output_index: outputIndex, content_index: 0, part });
    const item = { id: itemId, type: 'message', status: 'completed', content: [part], role: 'assistant' };
    this.emit('response.output_item.done', { output_index: outputIndex, item });
    return item;
  }

  reasoning(outputIndex: number, summary: string): Record<string, unknown> {
    const itemId = `rs_${this.context.id}_${outputIndex}`;
    this.emit('response.output_item.added', { output_index: outputIndex, item: { id: itemId, type: 'reasoning', summary: [] } });
    const part = { type: 'summary_text', text: summary };
    const position = { item_id: itemId, output_index: outputIndex, summary_index: 0 };
    this.emit('response.reasoning_summary_part.added', { ...position, part: { type: 'summary_text', text: '' } });
    for (const delta of splitIntoDeltas(summary)) this.emit('response.reasoning_summary_text.delta', { ...position, delta });
    this.emit('response.reasoning_summary_text.done', { ...position, text: summary });
    this.emit('response.reasoning_summary_part.done', { ...position, part });
    const item: Record<string, unknown> = { id: itemId, type: 'reasoning', summary: [part] };
    if (this.context.encryptedReasoning) item.encrypted_content = fakeEncryptedReasoning(itemId);
    this.emit('response.output_item.done', { output_index: outputIndex, item });
    return item;
  }

  toolCall(outputIndex: number, call: ScriptedToolCall): Record<string, unknown> {
    const custom = call.kind === 'custom';
    const itemId = `${custom ? 'ctc' : 'fc'}_${this.context.id}_${outputIndex}`;
    const callId = call.callId ?? `call_${this.context.id}_${outputIndex}`;
    const valueField = custom ? 'input' : 'arguments';
    const eventPrefix = custom ? 'response.custom_tool_call_input' : 'response.function_call_arguments';
    const base = { id: itemId, type: custom ? 'custom_tool_call' : 'function_call', call_id: callId, name: call.name };
    this.emit('response.output_item.added', { output_index: outputIndex, item: { ...base, status: 'in_progress', [valueField]: '' } });
    for (const delta of splitIntoDeltas(call.arguments)) this.emit(`${eventPrefix}.delta`, { item_id: itemId, output_index: outputIndex, delta });
    this.emit(`${eventPrefix}.done`, { item_id: itemId, output_index: outputIndex, [valueField]: call.arguments });
    const item = { ...base, status: 'completed', [valueField]: call.arguments };
    this.emit('response.output_item.done', { output_index: outputIndex, item });
    return item;
  }
}

export function responsesReply(reply: ScriptedReply, context: WireContext): string[] {
  const { text, toolCalls, reasoning, usage, stop } = withDefaults(reply);
  const wire = new ResponsesFrames(context);
  wire.start();
  const output: Array<Record<string, unknown>> = [];
  if (reasoning !== undefined) output.push(wire.reasoning(output.length, reasoning));
  if (text !== '') output.push(wire.message(output.length, text));
  for (const call of toolCalls) output.push(wire.toolCall(output.length, call));
  const wireUsage = {
    input_tokens: usage.input, input_tokens_details: { cached_tokens: usage.cached },
    output_tokens: usage.output, output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.input + usage.output,
  };
  if (stop === 'max_tokens') {
    const details = { reason: 'max_output_tokens' };
    wire.emit('response.incomplete', { response: wire.response('incomplete', { incomplete_details: details, output, usage: wireUsage }) });
  } else {
    wire.emit('response.completed', { response: wire.response('completed', { output, usage: wireUsage }) });
  }
  return wire.frames;
}

function responsesPartial(afterText: string | undefined, context: WireContext): string[] {
  return openResponsesPartial(afterText, context).frames;
}

function openResponsesPartial(afterText: string | undefined, context: WireContext): ResponsesFrames {
  const wire = new ResponsesFrames(context);
  wire.start();
  if (afterText) wire.openMessage(0, afterText);
  return wire;
}

/** The partial stream, then an `error` event and `response.failed`, as api.openai.com sends them. */
function responsesStreamError(afterText: string | undefined, error: ScriptedError, context: WireContext): string[] {
  const code = error.code ?? 'server_error';
  const message = error.message ?? 'The server had an error while processing your request.';
  const wire = openResponsesPartial(afterText, context);
  wire.emit('error', { error: { type: code, code, message, param: null } });
  wire.emit('response.failed', { response: wire.response('failed', { error: { code, message } }) });
  return wire.frames;
}

// ---------------------------------------------------------------- Anthropic Messages

function anthropicStart(context: WireContext, usage: { input: number; cached: number }): string[] {
  const message = {
    id: `msg_${context.id}`, type: 'message', role: 'assistant', model: context.model, content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: usage.input, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cached, output_tokens: 1 },
  };
  return [frame({ type: 'message_start', message }, 'message_start'), frame({ type: 'ping' }, 'ping')];
}

function anthropicBlock(index: number, block: Record<string, unknown>, deltas: Array<Record<string, unknown>>, close = true): string[] {
  const frames = [frame({ type: 'content_block_start', index, content_block: block }, 'content_block_start')];
  for (const delta of deltas) frames.push(frame({ type: 'content_block_delta', index, delta }, 'content_block_delta'));
  if (close) frames.push(frame({ type: 'content_block_stop', index }, 'content_block_stop'));
  return frames;
}

const textDeltas = (text: string) => splitIntoDeltas(text).map((piece) => ({ type: 'text_delta', text: piece }));

function anthropicReply(reply: ScriptedReply, context: WireContext): string[] {
  const { text, toolCalls, reasoning, usage, stop } = withDefaults(reply);
  const frames = anthropicStart(context, usage);
  let index = 0;
  if (reasoning !== undefined) {
    const deltas: Array<Record<string, unknown>> = splitIntoDeltas(reasoning).map((piece) => ({ type: 'thinking_delta', thinking: piece }));
    deltas.push({ type: 'signature_delta', signature: fakeThinkingSignature(`${context.id}_${index}`) });
    frames.push(...anthropicBlock(index++, { type: 'thinking', thinking: '', signature: '' }, deltas));
  }
  if (text !== '') frames.push(...anthropicBlock(index++, { type: 'text', text: '' }, textDeltas(text)));
  for (const call of toolCalls) {
    const id = call.callId ?? `toolu_${context.id}_${index}`;
    // Real streams often open with an empty fragment, then split the JSON anywhere.
    const fragments = ['', ...splitIntoDeltas(call.arguments)].map((partial_json) => ({ type: 'input_json_delta', partial_json }));
    frames.push(...anthropicBlock(index++, { type: 'tool_use', id, name: call.name, input: {} }, fragments));
  }
  const stopReason = stop === 'max_tokens' ? 'max_tokens' : toolCalls.length > 0 ? 'tool_use' : 'end_turn';
  const finalUsage = { input_tokens: usage.input, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cached, output_tokens: usage.output };
  frames.push(frame({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: finalUsage }, 'message_delta'));
  frames.push(frame({ type: 'message_stop' }, 'message_stop'));
  return frames;
}

function anthropicPartial(afterText: string | undefined, context: WireContext): string[] {
  const frames = anthropicStart(context, { input: DEFAULT_USAGE.input, cached: 0 });
  if (afterText) frames.push(...anthropicBlock(0, { type: 'text', text: '' }, textDeltas(afterText), false));
  return frames;
}

function anthropicStreamError(afterText: string | undefined, error: ScriptedError, context: WireContext): string[] {
  const body = { type: 'error', error: { details: null, type: error.code ?? 'overloaded_error', message: error.message ?? 'Overloaded' }, request_id: `req_${context.id}` };
  return [...anthropicPartial(afterText, context), frame(body, 'error')];
}

// ---------------------------------------------------------------- Chat Completions

function chatChunk(context: WireContext, delta: Record<string, unknown>, finishReason: string | null = null): string {
  return frame({
    id: `chatcmpl-${context.id}`, object: 'chat.completion.chunk', created: CREATED_AT, model: context.model, system_fingerprint: 'fp_fake',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
}

function chatReply(reply: ScriptedReply, context: WireContext): string[] {
  const { text, toolCalls, reasoning, usage, stop } = withDefaults(reply);
  const frames = [chatChunk(context, { role: 'assistant', content: '', refusal: null })];
  for (const piece of splitIntoDeltas(reasoning ?? '')) frames.push(chatChunk(context, { reasoning_content: piece }));
  for (const piece of splitIntoDeltas(text)) frames.push(chatChunk(context, { content: piece }));
  toolCalls.forEach((call, index) => {
    const id = call.callId ?? `call_${context.id}_${index}`;
    frames.push(chatChunk(context, { tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of splitIntoDeltas(call.arguments)) frames.push(chatChunk(context, { tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  const finishReason = stop === 'max_tokens' ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop';
  frames.push(chatChunk(context, {}, finishReason));
  if (context.includeUsage) {
    frames.push(frame({
      id: `chatcmpl-${context.id}`, object: 'chat.completion.chunk', created: CREATED_AT, model: context.model, system_fingerprint: 'fp_fake', choices: [],
      usage: {
        prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output,
        prompt_tokens_details: { cached_tokens: usage.cached }, completion_tokens_details: { reasoning_tokens: usage.reasoning },
      },
    }));
  }
  frames.push('data: [DONE]\n\n');
  return frames;
}

function chatPartial(afterText: string | undefined, context: WireContext): string[] {
  const frames = [chatChunk(context, { role: 'assistant', content: '', refusal: null })];
  for (const piece of splitIntoDeltas(afterText ?? '')) frames.push(chatChunk(context, { content: piece }));
  return frames;
}

/** As Groq does it: an `event: error` frame, then the connection closes with no [DONE]. */
function chatStreamError(afterText: string | undefined, error: ScriptedError, context: WireContext): string[] {
  const code = error.code ?? 'service_unavailable';
  const body = { error: { message: error.message ?? 'Service Unavailable', type: 'internal_server_error', code, status_code: 503 } };
  return [...chatPartial(afterText, context), frame(body, 'error')];
}

export const wireByDialect = {
  'openai-responses': { reply: responsesReply, partial: responsesPartial, streamError: responsesStreamError },
  'anthropic-messages': { reply: anthropicReply, partial: anthropicPartial, streamError: anthropicStreamError },
  'openai-chat': { reply: chatReply, partial: chatPartial, streamError: chatStreamError },
} satisfies Record<WireDialect, unknown>;
