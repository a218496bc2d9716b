import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult, type Task } from '@modelcontextprotocol/sdk/types.js';
import { mcpClient, useMcpAgent } from './mcp-support.ts';

const TOKEN = 'mcp-tasks-test-token-0123456789abcdef012345';
const touch = (callId: string, file: string) => ({ name: 'shell', arguments: JSON.stringify({ command: ['touch', file] }), callId });

/** A task-augmented tools/call: the CreateTaskResult, as an MCP client gets it before the work is done. */
async function createTask(client: Client, name: string, args: Record<string, unknown>): Promise<Task> {
  const created = await client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
  return created.task;
}

/** Polls tasks/get (as a task client does, at the task's pollInterval) until the task is in `status`. */
async function pollUntil(client: Client, taskId: string, status: Task['status']): Promise<Task> {
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (task.status === status) return task;
    assert.ok(!['completed', 'failed', 'cancelled'].includes(task.status) || status === task.status, `task ${taskId} ended ${task.status}, not ${status}`);
    await sleep(task.pollInterval ?? 100);
  }
}

describe('MCP Tasks at /mcp: a task-augmented start_turn is the turn', () => {
  const mcp = useMcpAgent(TOKEN);

  it('declares tasks for tools/call, list and cancel; start_turn and answer_request take them optionally', async () => {
    const tasks = mcp.agent.getServerCapabilities()?.tasks;
    assert.ok(tasks?.requests?.tools?.call && tasks.list && tasks.cancel);
    const { tools } = await mcp.agent.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    assert.equal(support.start_turn, 'optional');
    assert.equal(support.answer_request, 'optional');
    assert.equal(support.get_turn, 'forbidden');
  });

  it('answers at once with a task whose id is the turn id, polls to completed, and tasks/result gives the tool result', async () => {
    mcp.fake.enqueue({ kind: 'reply', text: 'task done' });
    const task = await createTask(mcp.agent, 'start_turn', { prompt: 'do it as a task', cwd: mcp.server.workspace });
    assert.ok(['working', 'completed'].includes(task.status));
    const turn = await mcp.server.request('GET', `/v1/turns/${task.taskId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(turn.status, 200, 'the task id is the turn id');
    await pollUntil(mcp.agent, task.taskId, 'completed');
    const result = (await mcp.agent.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult & { structuredContent: any };
    assert.equal(result.structuredContent.status, 'completed');
    assert.equal(result.structuredContent.text, 'task done');
    assert.equal(result.structuredContent.turnId, task.taskId);
    const listed = await mcp.agent.experimental.tasks.listTasks();
    assert.ok(listed.tasks.some((one) => one.taskId === task.taskId && one.status === 'completed'));
  });

  it('is input_required while an approval waits; answer_request answers it and the task completes with the change', async () => {
    mcp.fake.enqueue({ kind: 'reply', toolCalls: [touch('call_task_wait', 'from-task.txt')] }, { kind: 'reply', text: 'made it' });
    const task = await createTask(mcp.agent, 'start_turn', { prompt: 'make a file as a task', cwd: mcp.server.workspace });
    const waiting = await pollUntil(mcp.agent, task.taskId, 'input_required');
    assert.match(waiting.statusMessage ?? '', /tool_approval .* allow_once, allow_session, deny/);
    const looked = (await mcp.agent.callTool({ name: 'get_turn', arguments: { turnId: task.taskId } })) as { structuredContent: any };
    const answered = (await mcp.agent.callTool({ name: 'answer_request', arguments: { requestId: looked.structuredContent.request.requestId, option: 'allow_once' } })) as { structuredContent: any };
    assert.equal(answered.structuredContent.status, 'completed');
    await pollUntil(mcp.agent, task.taskId, 'completed');
    const result = (await mcp.agent.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as { structuredContent: any };
    assert.deepEqual(result.structuredContent.changes.map((change: any) => [change.path, change.kind]), [['from-task.txt', 'created']]);
    assert.equal(existsSync(join(mcp.server.workspace, 'from-task.txt')), true);
  });

  it('with elicitation the approval reaches the client through tasks/result, as the SDK streams a task call', async () => {
    const asked: string[][] = [];
    const elicitor = await mcpClient(mcp.server.url, TOKEN, (_message, options) => (asked.push(options), { option: 'allow_once' }));
    try {
      mcp.fake.enqueue({ kind: 'reply', toolCalls: [touch('call_task_elicit', 'elicited.txt')] }, { kind: 'reply', text: 'elicited and made' });
      const seen: string[] = [];
      let result: any;
      for await (const message of elicitor.experimental.tasks.callToolStream({ name: 'start_turn', arguments: { prompt: 'make a file, asking me', cwd: mcp.server.workspace } }, CallToolResultSchema, { task: { ttl: 60_000 } })) {
        if (message.type === 'taskCreated' || message.type === 'taskStatus') seen.push(message.task.status);
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') throw message.error;
      }
      assert.ok(seen.includes('input_required'), `statuses seen: ${seen.join(', ')}`);
      assert.deepEqual(asked, [['allow_once', 'allow_session', 'deny']]);
      assert.equal(result.structuredContent.status, 'completed');
      assert.equal(result.structuredContent.text, 'elicited and made');
      assert.equal(existsSync(join(mcp.server.workspace, 'elicited.txt')), true);
    } finally {
      await elicitor.close();
    }
  });

  it('tasks/cancel cancels the turn; its result says cancelled, and an ended task cannot be cancelled again', async () => {
    mcp.fake.enqueue({ kind: 'reply', toolCalls: [touch('call_task_cancel', 'never-task.txt')] });
    const task = await createTask(mcp.agent, 'start_turn', { prompt: 'wait, then be cancelled', cwd: mcp.server.workspace });
    await pollUntil(mcp.agent, task.taskId, 'input_required');
    const cancelled = await mcp.agent.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    const turn = await mcp.server.request('GET', `/v1/turns/${task.taskId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(turn.json.status, 'cancelled');
    const result = (await mcp.agent.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as { structuredContent: any };
    assert.equal(result.structuredContent.status, 'cancelled');
    await assert.rejects(mcp.agent.experimental.tasks.cancelTask(task.taskId), /terminal status: cancelled/);
    assert.equal(existsSync(join(mcp.server.workspace, 'never-task.txt')), false);
  });

  it('a refusal before any turn exists is a failed task whose result is the tool error; unknown task ids are not found', async () => {
    const task = await createTask(mcp.agent, 'start_turn', { prompt: 'nowhere', sessionId: '00000000-0000-4000-8000-000000000000' });
    assert.equal(task.status, 'failed');
    const result = (await mcp.agent.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult;
    assert.equal(result.isError, true);
    assert.match((result.content[0] as { text: string }).text, /session_not_found/);
    await assert.rejects(mcp.agent.experimental.tasks.getTask('00000000-0000-4000-8000-000000000000'), /not found/i);
    await assert.rejects(mcp.agent.experimental.tasks.getTask('not-a-turn-id'), /not found/i);
  });
});
