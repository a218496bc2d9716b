/**
 * Canonical (OpenAI Responses-style) items → Chat Completions messages and tools.
 *
 * Chat Completions has no place for reasoning or server-side tool items, so they are dropped when
 * sending (they stay in canonical history). Custom (free-text) tools travel as function tools with
 * one string parameter `input`; their calls as function calls with arguments `{"input": "…"}`.
 */
import type OpenAI from 'openai';
import type { CanonicalItem, ToolSpec } from '../types.ts';

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;
type AssistantMessage = OpenAI.Chat.ChatCompletionAssistantMessageParam;
type ToolCall = OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
type ContentPart = OpenAI.Chat.ChatCompletionContentPart;
type Json = Record<string, unknown>;

/** JSON Schema for a custom tool's single free-text parameter, grammar included as guidance. */
export function customToolParameters(tool: ToolSpec): Record<string, unknown> {
  let description = 'The raw text input for this tool.';
  if (tool.format?.type === 'grammar') {
    description += ` It must match this ${tool.format.syntax} grammar:\n${tool.format.definition}`;
  }
  return { type: 'object', properties: { input: { type: 'string', description } }, required: ['input'], additionalProperties: false };
}

export function chatTools(tools: ToolSpec[]): OpenAI.Chat.ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.kind === 'custom' ? customToolParameters(tool) : tool.parameters ?? { type: 'object', properties: {} },
    },
  }));
}

/**
 * The system prompt plus canonical history as Chat messages. Adjacent assistant output (text and
 * tool calls) becomes one assistant message, because tool messages must follow the message that
 * holds their tool_calls.
 */
export function canonicalToChatMessages(instructions: string, items: CanonicalItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (instructions !== '') messages.push({ role: 'system', content: instructions });
  let assistant: AssistantMessage | null = null;
  const currentAssistant = (): AssistantMessage => {
    if (!assistant) {
      assistant = { role: 'assistant', content: null };
      messages.push(assistant);
    }
    return assistant;
  };

  for (const item of items) {
    switch (item.type) {
      case 'message':
        if (item.role === 'assistant') {
          appendAssistantText(currentAssistant(), textOf(item.content));
        } else {
          assistant = null;
          messages.push(inputMessage(item));
        }
        break;
      case 'function_call':
        addToolCall(currentAssistant(), String(item.call_id), String(item.name), typeof item.arguments === 'string' ? item.arguments : '{}');
        break;
      case 'custom_tool_call':
        addToolCall(currentAssistant(), String(item.call_id), String(item.name), JSON.stringify({ input: String(item.input ?? '') }));
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        assistant = null;
        messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: outputText(item.output) });
        break;
      default:
        // reasoning, server-side tool items and other dialects' extensions cannot be sent
        break;
    }
  }
  return messages;
}

function addToolCall(message: AssistantMessage, id: string, name: string, args: string): void {
  const call: ToolCall = { id, type: 'function', function: { name, arguments: args } };
  message.tool_calls = [...(message.tool_calls ?? []), call];
}

function appendAssistantText(message: AssistantMessage, text: string): void {
  if (text === '') return;
  message.content = typeof message.content === 'string' && message.content !== '' ? `${message.content}\n\n${text}` : text;
}

/** user, system and developer messages; developer becomes system, which every server knows. */
function inputMessage(item: CanonicalItem): ChatMessage {
  const role = item.role === 'system' || item.role === 'developer' ? 'system' : 'user';
  const parts = contentParts(item.content);
  const hasImage = parts.some((part) => part.type === 'image_url');
  if (role === 'system' || !hasImage) return { role, content: parts.map((part) => (part.type === 'text' ? part.text : '')).join('\n') };
  return { role: 'user', content: parts };
}

function contentParts(content: unknown): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const parts: ContentPart[] = [];
  for (const part of content as Json[]) {
    if (typeof part.text === 'string') parts.push({ type: 'text', text: part.text });
    else if (part.type === 'refusal' && typeof part.refusal === 'string') parts.push({ type: 'text', text: part.refusal });
    else if (part.type === 'input_image' && typeof part.image_url === 'string') {
      parts.push({ type: 'image_url', image_url: { url: part.image_url } });
    }
  }
  return parts;
}

function textOf(content: unknown): string {
  return contentParts(content)
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join('');
}

/** Tool messages carry text: strings as they are, content parts as their text, other JSON encoded. */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return textOf(output);
  return JSON.stringify(output ?? null);
}
