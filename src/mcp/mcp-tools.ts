/**
 * The MCP servers' tools in a session's tool registry: the built-in tools, then one function tool
 * per tool the McpManager lists right now, so a server that died is absent from the next model
 * request and back once it restarted. A call is planned from the server's annotation (read-only
 * runs without a tool_approval request; anything else asks, or runs under --yolo like every tool)
 * and runs as `manager.call`, bounded like other tool output.
 */
import type { PreparedToolCall, ToolRegistry } from '../agent/tools/registry.ts';
import { failure, success, type ToolOutcome } from '../agent/tools/types.ts';
import type { ToolSpec } from '../agent/providers/types.ts';
import type { McpManager, McpTool } from './mcp-manager.ts';
import { isMcpToolName } from './tool-names.ts';

export function withMcpTools(registry: ToolRegistry, manager: McpManager): ToolRegistry {
  const current = (name: string): McpTool | undefined => manager.tools().find((tool) => tool.name === name);
  return {
    get specs() {
      return [...registry.specs, ...manager.tools().map(specOf)];
    },
    has: (name) => (isMcpToolName(name) ? current(name) !== undefined : registry.has(name)),
    prepare(request, ctx) {
      if (!isMcpToolName(request.name)) return registry.prepare(request, ctx);
      const tool = current(request.name);
      if (!tool) return { ok: false, outcome: failure(`The tool ${request.name} is not available now: its MCP server is not connected.`) };
      const args = parseArguments(request.input);
      if (typeof args === 'string') return { ok: false, outcome: failure(`Invalid call to ${tool.name}: ${args}`) };
      return { ok: true, call: { name: tool.name, input: request.input, args, plan: { readOnly: tool.readOnly, paths: [] }, paths: [] } };
    },
    run: (call, ctx) => (isMcpToolName(call.name) ? runMcpCall(manager, call, ctx.signal) : registry.run(call, ctx)),
  };
}

async function runMcpCall(manager: McpManager, call: PreparedToolCall, signal: AbortSignal): Promise<ToolOutcome> {
  try {
    const output = await manager.call(call.name, call.args as Record<string, unknown>, signal);
    return output.isError ? failure(output.text, output.truncated) : success(output.text, output.truncated);
  } catch {
    // manager.call rejects only when the turn's signal aborted
    return failure('The tool call was aborted.');
  }
}

function specOf(tool: McpTool): ToolSpec {
  return { name: tool.name, description: tool.description, kind: 'function', parameters: tool.inputSchema };
}

/** The arguments as a JSON object, or why they are not one (the model is told). */
function parseArguments(input: string): Record<string, unknown> | string {
  if (input.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    return 'the arguments are not valid JSON';
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'the arguments must be a JSON object';
  return parsed as Record<string, unknown>;
}
