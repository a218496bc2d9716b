/**
 * Canonical (OpenAI Responses-style) items ↔ Anthropic Messages content, in both directions.
 *
 * Anthropic-only data is kept on canonical items that carry `provider: 'anthropic'`:
 * - thinking → reasoning {content: [{type:'reasoning_text', text}], encrypted_content: signature}
 * - redacted_thinking → reasoning {encrypted_content: data, redacted: true}
 * - server tool blocks (server_tool_use + its *_tool_result) → web_search_call (web search) or
 *   anthropic_block (anything else), with the raw blocks under `anthropic_blocks`, echoed unchanged.
 * Such items cannot be sent to another dialect (see isAnthropicOnlyItem); reasoning that came from
 * another provider cannot be sent to Anthropic and is dropped here.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { CanonicalItem } from '../types.ts';

const ANTHROPIC_ORIGIN = 'anthropic';

type MessageParam = Anthropic.MessageParam;
type BlockParam = Anthropic.ContentBlockParam;
type Role = 'user' | 'assistant';
type Json = Record<string, unknown>;
/** A finished Anthropic content block as streamed or replayed (any block type, raw JSON). */
export type AnthropicBlock = Json & { type: string };

/** True for items only Anthropic can read: its thinking and its server-side tool blocks. */
export function isAnthropicOnlyItem(item: CanonicalItem): boolean {
  return item.provider === ANTHROPIC_ORIGIN && (item.type === 'reasoning' || Array.isArray(item.anthropic_blocks));
}

/** Anthropic accepts tool ids matching ^[a-zA-Z0-9_-]+$; other dialects' ids may hold more. */
function anthropicToolId(callId: unknown): string {
  return String(callId ?? '').replace(/[^a-zA-Z0-9_-]/g, '_') || 'call_unknown';
}

/** A JSON arguments string as Anthropic tool input (always an object; unparseable → {}). */
function toolInputFromArguments(argumentsJson: unknown): Json {
  if (typeof argumentsJson !== 'string' || argumentsJson.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(argumentsJson);
    return isRecord(parsed) && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

export interface CanonicalToAnthropicOptions {
  customToolNames?: ReadonlySet<string>;
  /** Mark the last replayed item before the trailing new input as a prompt-cache breakpoint. */
  cacheBreakpointBeforeNewInput?: boolean;
}

/**
 * Canonical history as Anthropic messages. Consecutive items of one role share a message, and
 * tool_result blocks come first in a user message. Items Anthropic cannot read are dropped.
 */
export function canonicalToAnthropic(items: CanonicalItem[], options: CanonicalToAnthropicOptions = {}): MessageParam[] {
  const messages: MessageParam[] = [];
  const lastCacheableBlock = new Map<number, Json>();
  items.forEach((item, itemIndex) => {
    for (const [role, block] of itemToBlocks(item)) {
      appendBlock(messages, role, block);
      if (isCacheable(block)) lastCacheableBlock.set(itemIndex, block as unknown as Json);
    }
  });
  if (options.cacheBreakpointBeforeNewInput) {
    for (let index = lastItemBeforeNewInput(items); index >= 0; index--) {
      const block = lastCacheableBlock.get(index);
      if (block) {
        block.cache_control = { type: 'ephemeral' };
        break;
      }
    }
  }
  return messages;
}

/** Anthropic messages back to canonical items (user text, tool results, assistant output). */
export function anthropicToCanonical(messages: MessageParam[], customToolNames: ReadonlySet<string> = new Set()): CanonicalItem[] {
  const items: CanonicalItem[] = [];
  const customCallIds = new Set<string>();
  for (const message of messages) {
    const blocks: AnthropicBlock[] =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as unknown as AnthropicBlock[]);
    if (message.role === 'assistant') {
      const assembler = new AssistantBlockAssembler(customToolNames);
      for (const block of blocks) {
        if (block.type === 'tool_use' && customToolNames.has(String(block.name))) customCallIds.add(String(block.id));
        items.push(...assembler.add(block));
      }
      items.push(...assembler.finish());
    } else {
      items.push(...userBlocksToItems(blocks, customCallIds));
    }
  }
  return items;
}

/**
 * Groups finished assistant blocks into canonical items in output order: consecutive text blocks
 * form one assistant message; a server tool use waits for its result block.
 */
export class AssistantBlockAssembler {
  private textParts: Json[] = [];
  private serverBlocks: AnthropicBlock[] = [];

  constructor(private readonly customToolNames: ReadonlySet<string>) {}

  add(block: AnthropicBlock): CanonicalItem[] {
    if (block.type === 'text') {
      const done = this.flushServerUse();
      if (typeof block.text === 'string' && block.text !== '') this.textParts.push(outputTextPart(block));
      return done;
    }
    const pendingUse = this.serverBlocks[0];
    if (pendingUse && isServerToolResult(block) && block.tool_use_id === pendingUse.id) {
      this.serverBlocks.push(block);
      return this.flushServerUse();
    }
    const done = [...this.flushText(), ...this.flushServerUse()];
    if (block.type === 'server_tool_use') this.serverBlocks = [block];
    else done.push(this.itemFor(block));
    return done;
  }

  finish(): CanonicalItem[] {
    return [...this.flushText(), ...this.flushServerUse()];
  }

  private flushText(): CanonicalItem[] {
    if (this.textParts.length === 0) return [];
    const content = this.textParts;
    this.textParts = [];
    return [{ type: 'message', role: 'assistant', content }];
  }

  private flushServerUse(): CanonicalItem[] {
    const [use, ...results] = this.serverBlocks;
    if (!use) return [];
    this.serverBlocks = [];
    const status = results.length > 0 ? 'completed' : 'incomplete';
    const common = { id: use.id, status, provider: ANTHROPIC_ORIGIN, anthropic_blocks: [use, ...results] };
    if (use.name !== 'web_search') return [{ type: 'anthropic_block', ...common }];
    const input = isRecord(use.input) ? use.input : {};
    return [{ type: 'web_search_call', ...common, action: { type: 'search', query: input.query } }];
  }

  private itemFor(block: AnthropicBlock): CanonicalItem {
    switch (block.type) {
      case 'thinking':
        return {
          type: 'reasoning',
          summary: [],
          content: [{ type: 'reasoning_text', text: String(block.thinking ?? '') }],
          encrypted_content: String(block.signature ?? ''),
          provider: ANTHROPIC_ORIGIN,
        };
      case 'redacted_thinking':
        return { type: 'reasoning', summary: [], encrypted_content: String(block.data ?? ''), provider: ANTHROPIC_ORIGIN, redacted: true };
      case 'tool_use': {
        const name = String(block.name);
        if (this.customToolNames.has(name)) {
          const text = isRecord(block.input) ? block.input.input : undefined;
          return { type: 'custom_tool_call', call_id: block.id, name, input: typeof text === 'string' ? text : JSON.stringify(block.input ?? {}) };
        }
        // A string input is JSON the model left invalid; keep it so the tool can report it.
        const args = typeof block.input === 'string' ? block.input : JSON.stringify(block.input ?? {});
        return { type: 'function_call', call_id: block.id, name, arguments: args };
      }
      default:
        return { type: 'anthropic_block', provider: ANTHROPIC_ORIGIN, anthropic_blocks: [block] };
    }
  }
}

function itemToBlocks(item: CanonicalItem): Array<[Role, BlockParam]> {
  switch (item.type) {
    case 'message':
      if (item.role === 'assistant') return assistantContentBlocks(item.content).map((block) => ['assistant', block]);
      return userContentBlocks(item.content).map((block) => ['user', block]);
    case 'function_call':
      return [['assistant', { type: 'tool_use', id: anthropicToolId(item.call_id), name: String(item.name), input: toolInputFromArguments(item.arguments) }]];
    case 'custom_tool_call':
      return [['assistant', { type: 'tool_use', id: anthropicToolId(item.call_id), name: String(item.name), input: { input: String(item.input ?? '') } }]];
    case 'function_call_output':
    case 'custom_tool_call_output':
      return [['user', toolResultBlock(item)]];
    case 'reasoning':
      return reasoningBlocks(item).map((block) => ['assistant', block]);
    default:
      if (item.provider === ANTHROPIC_ORIGIN && Array.isArray(item.anthropic_blocks)) {
        return (item.anthropic_blocks as AnthropicBlock[]).map((block) => ['assistant', { ...block } as unknown as BlockParam]);
      }
      return [];
  }
}

function reasoningBlocks(item: CanonicalItem): BlockParam[] {
  if (item.provider !== ANTHROPIC_ORIGIN) return [];
  const secret = typeof item.encrypted_content === 'string' ? item.encrypted_content : '';
  if (item.redacted === true) return secret ? [{ type: 'redacted_thinking', data: secret }] : [];
  // Unsigned thinking is rejected by the API, so it cannot be replayed.
  if (!secret) return [];
  const parts = Array.isArray(item.content) ? (item.content as Json[]) : [];
  const thinking = parts.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
  return [{ type: 'thinking', thinking, signature: secret }];
}

function toolResultBlock(item: CanonicalItem): Anthropic.ToolResultBlockParam {
  const output = item.output;
  let content: Anthropic.ToolResultBlockParam['content'];
  if (typeof output === 'string') content = output;
  else if (Array.isArray(output)) content = userContentBlocks(output) as Anthropic.ToolResultBlockParam['content'];
  else content = JSON.stringify(output ?? null);
  const block: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: anthropicToolId(item.call_id), content };
  if (item.is_error === true) block.is_error = true;
  return block;
}

function assistantContentBlocks(content: unknown): BlockParam[] {
  const parts = typeof content === 'string' ? [{ type: 'output_text', text: content }] : Array.isArray(content) ? (content as Json[]) : [];
  const blocks: BlockParam[] = [];
  for (const part of parts) {
    const text = part.type === 'refusal' ? part.refusal : part.text;
    if (typeof text === 'string' && text !== '') blocks.push({ type: 'text', text });
  }
  return blocks;
}

function userContentBlocks(content: unknown): BlockParam[] {
  const parts = typeof content === 'string' ? [{ type: 'input_text', text: content }] : Array.isArray(content) ? (content as Json[]) : [];
  const blocks: BlockParam[] = [];
  for (const part of parts) {
    if (typeof part.text === 'string') {
      if (part.text !== '') blocks.push({ type: 'text', text: part.text });
    } else if (part.type === 'input_image' && typeof part.image_url === 'string') {
      blocks.push(imageBlock(part.image_url));
    }
  }
  return blocks;
}

function imageBlock(imageUrl: string): Anthropic.ImageBlockParam {
  const dataUrl = /^data:(image\/[a-z+.-]+);base64,(.*)$/is.exec(imageUrl);
  if (dataUrl) {
    const mediaType = dataUrl[1].toLowerCase() as Anthropic.Base64ImageSource['media_type'];
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data: dataUrl[2] } };
  }
  return { type: 'image', source: { type: 'url', url: imageUrl } };
}

function userBlocksToItems(blocks: AnthropicBlock[], customCallIds: ReadonlySet<string>): CanonicalItem[] {
  const items: CanonicalItem[] = [];
  let parts: Json[] = [];
  const flushParts = () => {
    if (parts.length > 0) items.push({ type: 'message', role: 'user', content: parts });
    parts = [];
  };
  for (const block of blocks) {
    if (block.type === 'tool_result') {
      flushParts();
      const custom = customCallIds.has(String(block.tool_use_id));
      const output = Array.isArray(block.content) ? userParts(block.content as AnthropicBlock[]) : block.content ?? '';
      const item: CanonicalItem = { type: custom ? 'custom_tool_call_output' : 'function_call_output', call_id: block.tool_use_id, output };
      if (block.is_error === true) item.is_error = true;
      items.push(item);
    } else {
      parts.push(...userParts([block]));
    }
  }
  flushParts();
  return items;
}

function userParts(blocks: AnthropicBlock[]): Json[] {
  const parts: Json[] = [];
  for (const block of blocks) {
    if (block.type === 'text') parts.push({ type: 'input_text', text: block.text });
    if (block.type === 'image' && isRecord(block.source)) {
      const source = block.source;
      const url = source.type === 'base64' ? `data:${String(source.media_type)};base64,${String(source.data)}` : source.url;
      parts.push({ type: 'input_image', image_url: url, detail: 'auto' });
    }
  }
  return parts;
}

function outputTextPart(block: AnthropicBlock): Json {
  const citations = Array.isArray(block.citations) ? (block.citations as Json[]) : [];
  const text = String(block.text);
  // Citations become portable url_citation annotations covering the block's text.
  const annotations = citations
    .filter((citation) => typeof citation.url === 'string')
    .map((citation) => ({ type: 'url_citation', url: citation.url, title: citation.title ?? '', start_index: 0, end_index: text.length }));
  return { type: 'output_text', text, annotations };
}

function appendBlock(messages: MessageParam[], role: Role, block: BlockParam): void {
  let last = messages[messages.length - 1];
  if (!last || last.role !== role) {
    last = { role, content: [] };
    messages.push(last);
  }
  const content = last.content as BlockParam[];
  if (block.type === 'tool_result') {
    const firstOther = content.findIndex((existing) => existing.type !== 'tool_result');
    content.splice(firstOther === -1 ? content.length : firstOther, 0, block);
  } else {
    content.push(block);
  }
}

/** The index of the last item before the trailing run of new input (user messages, tool outputs). */
function lastItemBeforeNewInput(items: CanonicalItem[]): number {
  let index = items.length - 1;
  while (index >= 0 && isNewInput(items[index])) index--;
  return index;
}

function isNewInput(item: CanonicalItem): boolean {
  return (item.type === 'message' && item.role !== 'assistant') || item.type.endsWith('_output');
}

/** Thinking blocks cannot carry cache_control. */
function isCacheable(block: BlockParam): boolean {
  return block.type !== 'thinking' && block.type !== 'redacted_thinking';
}

function isServerToolResult(block: AnthropicBlock): boolean {
  return block.type.endsWith('_tool_result') && typeof block.tool_use_id === 'string';
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null;
}
