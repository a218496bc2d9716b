import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpManager } from '../../src/mcp/mcp-manager.ts';
import { MODEL_OUTPUT_LIMIT } from '../../src/exec/output.ts';
import { STDIO_FIXTURE, capturedLogger, eventually, toolsWhere } from './support.ts';

const LEAKED_TOKEN = 'service-token-that-must-not-reach-tool-servers';

function stdioServer(startLog: string, extraEnv: Record<string, string> = {}) {
  return { kind: 'stdio' as const, name: 'local', command: process.execPath, args: ['--import', 'tsx', STDIO_FIXTURE], env: { MCP_TEST_START_LOG: startLog, MCP_TEST_GIVEN: 'given-value', ...extraEnv } };
}

const starts = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line)) : []);

describe('an MCP server over stdio', () => {
  const startLog = join(mkdtempSync(join(tmpdir(), 'agentd-mcp-')), 'starts.jsonl');
  const { logger, lines, entries } = capturedLogger();
  let manager: McpManager;
  const saved = { SERVICE_TOKEN: process.env.SERVICE_TOKEN, OPENAI_API_KEY: process.env.OPENAI_API_KEY };

  before(async () => {
    // agentd's own secrets in its environment: the tool server must not inherit them
    process.env.SERVICE_TOKEN = LEAKED_TOKEN;
    process.env.OPENAI_API_KEY = 'sk-openai-key-that-must-not-leak';
    manager = new McpManager([stdioServer(startLog)], { logger, callTimeoutMs: 1_500, initialBackoffMs: 100, maxBackoffMs: 400 });
    await manager.start();
  });
  after(async () => {
    await manager.close();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('lists its tools at start-up as mcp__<server>__<tool> with their schemas and read-only annotation', () => {
    const tools = manager.tools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['mcp__local__add_tool', 'mcp__local__crash', 'mcp__local__echo', 'mcp__local__fail', 'mcp__local__flood', 'mcp__local__slow', 'mcp__local__write_note']);
    const echo = tools.find((tool) => tool.name === 'mcp__local__echo')!;
    assert.deepEqual(echo.inputSchema, { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    assert.equal(echo.readOnly, true);
    assert.equal(echo.description, 'Returns its text');
    assert.equal(echo.serverToolName, 'echo');
    assert.equal(tools.find((tool) => tool.name === 'mcp__local__write_note')!.readOnly, false);
  });

  it('starts the server with a minimal environment plus its configured one, without agentd\'s token or provider keys', () => {
    const [first] = starts(startLog);
    assert.equal(first.given, 'given-value');
    assert.equal(first.serviceToken, null);
    assert.equal(first.openaiKey, null);
  });

  it('calls a tool and returns its text; a tool error is an error result', async () => {
    assert.deepEqual(await manager.call('mcp__local__echo', { text: 'hello' }), { text: 'echo: hello', isError: false, truncated: false, outcome: 'ok' });
    const failed = await manager.call('mcp__local__fail', {});
    assert.equal(failed.isError, true);
    assert.equal(failed.text, 'the disk is full');
    const unknown = await manager.call('mcp__local__nothing', {});
    assert.equal(unknown.isError, true);
    assert.match(unknown.text, /no MCP tool mcp__local__nothing/);
  });

  it('bounds the output like other tools and does not forward binary content', async () => {
    const flood = await manager.call('mcp__local__flood', { characters: 200_000 });
    assert.equal(flood.truncated, true);
    assert.ok(flood.text.length < MODEL_OUTPUT_LIMIT + 200, String(flood.text.length));
    assert.match(flood.text, /output truncated after 65536 characters/);
    assert.doesNotMatch(flood.text, /AAAA/);
  });

  it('times a call out, and the server keeps serving', async () => {
    const started = Date.now();
    const slow = await manager.call('mcp__local__slow', { ms: 20_000 });
    assert.equal(slow.outcome, 'timeout');
    assert.equal(slow.isError, true);
    assert.match(slow.text, /did not answer within 1.5 s/);
    // about time: the call's timeout is 1.5 s and the tool would answer after 20 s; 5 s tells the two apart on a loaded machine
    assert.ok(Date.now() - started < 5_000);
    assert.equal((await manager.call('mcp__local__echo', { text: 'still here' })).text, 'echo: still here');
  });

  it('rejects when the caller aborts', async () => {
    const controller = new AbortController();
    const call = manager.call('mcp__local__slow', { ms: 20_000 }, controller.signal);
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(call);
  });

  it('picks up notifications/tools/list_changed', async () => {
    assert.equal(manager.tools().some((tool) => tool.name === 'mcp__local__late'), false);
    await manager.call('mcp__local__add_tool', {});
    await toolsWhere(manager, () => manager.tools().some((tool) => tool.name === 'mcp__local__late'));
    assert.equal((await manager.call('mcp__local__late', {})).text, 'late tool ran');
  });

  it('when the server dies: its tools vanish, it is logged and restarted, and its tools come back', async () => {
    const startsBefore = starts(startLog).length;
    const gone = toolsWhere(manager, () => manager.tools().length === 0);
    await manager.call('mcp__local__crash', {});
    await gone;
    const call = await manager.call('mcp__local__echo', { text: 'anyone?' });
    assert.equal(call.isError, true);
    await toolsWhere(manager, () => manager.tools().some((tool) => tool.name === 'mcp__local__echo'));
    assert.equal(starts(startLog).length, startsBefore + 1);
    assert.equal((await manager.call('mcp__local__echo', { text: 'back' })).text, 'echo: back');
    const restart = entries().find((entry) => entry.msg === 'MCP server unavailable; restarting');
    assert.ok(restart, lines.join(''));
    assert.equal(restart.mcpServer, 'local');
    assert.equal(restart.restartInMs, 100);
    // the log never carries agentd's secrets nor the server's environment
    assert.doesNotMatch(lines.join(''), new RegExp(`${LEAKED_TOKEN}|given-value`));
  });
});

describe('an MCP server that cannot start', () => {
  it('is logged, offers no tools, does not hold up the others and is retried with a growing delay', async () => {
    const { logger, entries } = capturedLogger();
    const startLog = join(mkdtempSync(join(tmpdir(), 'agentd-mcp-')), 'starts.jsonl');
    const manager = new McpManager(
      [
        { kind: 'stdio', name: 'missing', command: '/nonexistent/mcp-server', args: [], env: { API_KEY: 'missing-server-api-key' } },
        stdioServer(startLog),
      ],
      { logger, initialBackoffMs: 20, maxBackoffMs: 80 },
    );
    try {
      await manager.start();
      assert.deepEqual([...new Set(manager.tools().map((tool) => tool.server))], ['local']);
      await eventually(() => entries().filter((entry) => entry.mcpServer === 'missing' && entry.restartInMs).length >= 4);
      const delays = entries().filter((entry) => entry.mcpServer === 'missing' && entry.restartInMs).map((entry) => entry.restartInMs);
      assert.deepEqual(delays.slice(0, 4), [20, 40, 80, 80]);
      assert.match(entries().find((entry) => entry.mcpServer === 'missing').reason, /ENOENT/);
      assert.doesNotMatch(JSON.stringify(entries()), /missing-server-api-key/);
    } finally {
      await manager.close();
    }
  });
});
