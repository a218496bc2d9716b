import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AgentdError } from '../../client/index.ts';

/** A tool's value as its result (text and structured content); agentd's refusals as tool errors (`isError`) that say what was wrong. */
export async function toolResult(run: () => Promise<object>): Promise<CallToolResult> {
  try {
    const value = await run();
    return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> };
  } catch (error) {
    return toolError(error);
  }
}

export function toolError(error: unknown): CallToolResult {
  const text = error instanceof AgentdError ? `${error.code}: ${error.message}` : `agentd could not be reached: ${(error as Error).message}`;
  return { isError: true, content: [{ type: 'text', text }] };
}
