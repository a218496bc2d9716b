/**
 * MCP tools through real turns: a stdio server of --mcp-config is offered to the model as
 * mcp__<server>__<tool> with its schema; a call that is not annotated read-only asks tool_approval
 * (allowed runs, denied does not reach the server), a read-only one runs unasked, and a crashed
 * server's tools are missing from the next model request until it is back.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeRequest } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { DENIED_OUTPUT } from '../../src/agent/policy/authorize.ts';
import { STDIO_FIXTURE, mcpServersReady } from './support.ts';
import { runnerScript } from '../e2e/sandbox-support.ts';

const directory = mkdtempSync(join(tmpdir(), 'agentd-mcp-turns-'));
const startLog = join(directory, 'starts.jsonl');
const configFile = join(directory, 'mcp.json');
writeFileSync(configFile, JSON.stringify({ mcpServers: { local: { command: process.execPath, args: ['--import', 'tsx', STDIO_FIXTURE], env: { MCP_TEST_START_LOG: startLog } } } }));

const starts = () => (existsSync(startLog) ? readFileSync(startLog, 'utf8').trim().split('\n').filter(Boolean).length : 0);
const toolNames = (request: FakeRequest): string[] => (request.body.tools ?? []).map((tool: { name: string }) => tool.name);
const call = (name: string, args: object, callId: string) => ({ name, arguments: JSON.stringify(args), callId });

describe('MCP tools in real turns', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServer({ args: ['--mcp-config', configFile] });
  before(async () => {
    ({ fake, server } = harness);
    await mcpServersReady(server);
  });
  const { newSession, submit, resolve, nthRequestOf, toolOutputSent } = harness;

  it('offers the server\'s tools to the model with their input schemas', async () => {
    const session = await newSession();
    fake.enqueue({ kind: 'reply', text: 'hi' });
    const turn = await submit(session.id, 'what tools are there');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    const request = fake.requests.at(-1)!;
    const echo = request.body.tools.find((tool: { name: string }) => tool.name === 'mcp__local__echo');
    assert.deepEqual(echo, { type: 'function', name: 'mcp__local__echo', description: 'Returns its text', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, strict: false });
    assert.ok(toolNames(request).includes('mcp__local__write_note'));
    assert.ok(toolNames(request).includes('shell'), 'the built-in tools stay');
  });

  it('asks tool_approval for a call not annotated read-only: allowed runs, denied never reaches the server', async () => {
    const session = await newSession();
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('mcp__local__write_note', { note: 'twelve chars' }, 'call_allowed')] },
      { kind: 'reply', toolCalls: [call('mcp__local__write_note', { note: 'never stored' }, 'call_denied')] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await submit(session.id, 'store notes');
    const first = await nthRequestOf(turn.id, 1);
    assert.equal(first.kind, 'tool_approval');
    assert.match(first.prompt, /mcp__local__write_note/);
    assert.equal((await resolve(first.id, { decision: 'allow_once' })).status, 200);
    const second = await nthRequestOf(turn.id, 2);
    assert.equal((await resolve(second.id, { decision: 'deny' })).status, 200);
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(toolOutputSent('call_allowed'), 'stored 12 characters');
    assert.equal(toolOutputSent('call_denied'), DENIED_OUTPUT);
  });

  it('runs a call annotated read-only without asking', async () => {
    const session = await newSession();
    fake.enqueue({ kind: 'reply', toolCalls: [call('mcp__local__echo', { text: 'unasked' }, 'call_echo')] }, { kind: 'reply', text: 'done' });
    const turn = await submit(session.id, 'echo something');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(toolOutputSent('call_echo'), 'echo: unasked');
    assert.deepEqual((await server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data, []);
    assert.equal(harness.events.ofTurn(turn.id).filter((event) => event.type === 'request.created').length, 0);
  });

  it('drops a crashed server\'s tools from the next model request and offers them again once it restarted', async () => {
    const session = await newSession();
    const startsBefore = starts();
    fake.enqueue({ kind: 'reply', toolCalls: [call('mcp__local__crash', {}, 'call_crash')] }, { kind: 'reply', text: 'crashed' });
    const crashing = await submit(session.id, 'crash it');
    // crash is not annotated read-only: it asks like any other
    const approval = await nthRequestOf(crashing.id, 1);
    await resolve(approval.id, { decision: 'allow_once' });
    assert.equal((await waitForTurn(server, crashing.id)).status, 'completed');
    // wait until the server process is gone (its tools vanish) before the next turn
    const deadline = Date.now() + 5_000;
    let missing: string[] = [];
    while (Date.now() < deadline) {
      fake.enqueue({ kind: 'reply', text: 'looking' });
      const probe = await submit(session.id, 'which tools now');
      await waitForTurn(server, probe.id);
      missing = toolNames(fake.requests.at(-1)!);
      if (!missing.some((name) => name.startsWith('mcp__local__'))) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(!missing.some((name) => name.startsWith('mcp__local__')), `still offered: ${missing.join(', ')}`);
    assert.ok(missing.includes('shell'));

    // restarted after its backoff (1 s): the tools are back
    const backBy = Date.now() + 10_000;
    let offered: string[] = [];
    while (Date.now() < backBy) {
      fake.enqueue({ kind: 'reply', text: 'looking again' });
      const probe = await submit(session.id, 'and now');
      await waitForTurn(server, probe.id);
      offered = toolNames(fake.requests.at(-1)!);
      if (offered.includes('mcp__local__echo')) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(offered.includes('mcp__local__echo'), `offered: ${offered.join(', ')}`);
    assert.equal(starts(), startsBefore + 1);
  });
});

describe('MCP tools of a sandboxed server', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServer({ args: ['--sandbox-runner', runnerScript(), '--mcp-config', configFile] });
  before(async () => {
    ({ fake, server } = harness);
    await mcpServersReady(server);
  });
  const { newSession, submit, resolve, nthRequestOf, toolOutputSent } = harness;

  it('keep their approvals: the MCP server runs on the host, outside the sandbox that auto-approves the other tools', async () => {
    const session = await newSession();
    fake.enqueue(
      { kind: 'reply', toolCalls: [call('shell', { command: ['touch', 'sandboxed.txt'] }, 'call_shell')] },
      { kind: 'reply', toolCalls: [call('mcp__local__write_note', { note: 'host side' }, 'call_note')] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await submit(session.id, 'touch, then note');
    const request = await nthRequestOf(turn.id, 1);
    assert.equal(request.kind, 'tool_approval');
    assert.match(request.prompt, /mcp__local__write_note/);
    // the shell call before it ran in the sandbox without asking
    assert.equal(existsSync(join(server.workspace, 'sandboxed.txt')), true);
    assert.equal((await resolve(request.id, { decision: 'deny' })).status, 200);
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(toolOutputSent('call_note'), DENIED_OUTPUT);
    assert.equal(harness.events.ofTurn(turn.id).filter((event) => event.type === 'request.created').length, 1);
  });
});
