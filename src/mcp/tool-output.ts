import { MODEL_OUTPUT_LIMIT, truncateForModel } from '../exec/output.ts';

/** One content block of a tools/call result, as the MCP specification defines them. */
interface ContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  uri?: string;
  resource?: { uri?: string; text?: string; mimeType?: string };
}

export interface McpCallOutput {
  /** what the model is sent, bounded like every tool's output */
  text: string;
  /** the server reported the call failed (`isError`), or agentd did (timeout, server gone) */
  isError: boolean;
  truncated: boolean;
  /** for the tool-call counter: `timeout` when agentd gave up waiting */
  outcome: 'ok' | 'error' | 'timeout';
}

/**
 * The text the model gets from a tools/call result: text blocks as they are, other blocks as a
 * short note (binary content is not forwarded), structured content when there is nothing else.
 */
export function callResultText(result: { content?: unknown; structuredContent?: unknown; isError?: unknown; toolResult?: unknown }, limit: number = MODEL_OUTPUT_LIMIT): McpCallOutput {
  const blocks = Array.isArray(result.content) ? (result.content as ContentBlock[]) : [];
  const parts = blocks.map(describeBlock);
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  // servers of the 2024-10-07 protocol answer { toolResult } instead of content
  if (parts.length === 0 && result.toolResult !== undefined) parts.push(typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult));
  const bounded = truncateForModel(parts.join('\n'), limit);
  const isError = result.isError === true;
  return { text: bounded.text, isError, truncated: bounded.truncated, outcome: isError ? 'error' : 'ok' };
}

export function failedCall(message: string, outcome: 'error' | 'timeout' = 'error'): McpCallOutput {
  return { text: message, isError: true, truncated: false, outcome };
}

function describeBlock(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text ?? '';
    case 'image':
    case 'audio':
      return `[${block.type} content (${block.mimeType ?? 'unknown type'}) not shown]`;
    case 'resource':
      return block.resource?.text ?? `[resource ${block.resource?.uri ?? ''} (${block.resource?.mimeType ?? 'binary'}) not shown]`;
    case 'resource_link':
      return `[resource link: ${block.uri ?? ''}]`;
    default:
      return `[${String(block.type)} content not shown]`;
  }
}
