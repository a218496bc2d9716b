import pino, { type Logger } from 'pino';
import { fileURLToPath } from 'node:url';
import type { McpManager } from '../../src/mcp/mcp-manager.ts';
import type { TestServer } from '../support/server.ts';

export const STDIO_FIXTURE = fileURLToPath(new URL('./fixtures/stdio-server.ts', import.meta.url));

/** A logger whose lines the test can read (and search for secrets). */
export function capturedLogger(): { logger: Logger; lines: string[]; entries: () => any[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  return { logger, lines, entries: () => lines.map((line) => JSON.parse(line)) };
}

/** Resolves when `condition` holds, checking after every tool-list change (and at once). */
export function toolsWhere(manager: McpManager, condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (condition()) return resolve();
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`tools never matched; now: ${manager.tools().map((tool) => tool.name).join(', ')}`));
    }, timeoutMs);
    const unsubscribe = manager.onToolsChanged(() => {
      if (!condition()) return;
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

export async function eventually(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once /readyz names no MCP server as pending (they connect in the background). */
export async function mcpServersReady(server: TestServer, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ready = await server.request('GET', '/readyz');
    if (ready.status === 200 && ready.json.pending === undefined) return;
    if (Date.now() > deadline) throw new Error(`MCP servers still pending: ${JSON.stringify(ready.json)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
