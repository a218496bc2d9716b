/** The names MCP tools are offered to the model under: `mcp__<server>__<tool>`. */

const MCP_TOOL_PREFIX = 'mcp__';

/** What every provider accepts as a function name. */
const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The model-facing name, or null when the server's tool name cannot be offered (too long, odd characters). */
export function mcpToolName(server: string, tool: string): string | null {
  const name = `${MCP_TOOL_PREFIX}${server}__${tool}`;
  return MODEL_TOOL_NAME.test(name) ? name : null;
}

export function isMcpToolName(name: string): boolean {
  return name.startsWith(MCP_TOOL_PREFIX);
}
