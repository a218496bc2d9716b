import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { authorizeToolCall } from '../../../src/agent/policy/authorize.ts';
import { createToolRegistry } from '../../../src/agent/tools/registry.ts';
import { makeContext, makeWorkspace } from './context.ts';

const ALL = ['shell', 'read_file', 'list_dir', 'search', 'apply_patch', 'update_plan', 'enter_plan_mode', 'exit_plan_mode', 'ask_question'];

test('specs list every tool; apply_patch is custom on Responses and a function tool elsewhere', () => {
  const responses = createToolRegistry({ dialect: 'openai-responses', search: { ripgrepPath: null } });
  assert.deepEqual(responses.specs.map((spec) => spec.name), ALL);
  const customPatch = responses.specs.find((spec) => spec.name === 'apply_patch')!;
  assert.equal(customPatch.kind, 'custom');
  assert.equal(customPatch.parameters, undefined);
  assert.deepEqual(customPatch.format, { type: 'text' });
  for (const spec of responses.specs.filter((spec) => spec.kind === 'function')) {
    assert.equal((spec.parameters as { type: string }).type, 'object', spec.name);
    assert.ok(spec.description.length > 20, spec.name);
  }
  const chat = createToolRegistry({ dialect: 'anthropic-messages', search: { ripgrepPath: null } });
  const functionPatch = chat.specs.find((spec) => spec.name === 'apply_patch')!;
  assert.equal(functionPatch.kind, 'function');
  assert.deepEqual((functionPatch.parameters as { required: string[] }).required, ['patch']);
  const child = createToolRegistry({ dialect: 'openai-chat', exclude: ['enter_plan_mode', 'exit_plan_mode'] });
  assert.equal(child.has('enter_plan_mode'), false);
  assert.equal(child.has('shell'), true);
});

test('a registry without executing tools offers exactly the tools that do not declare they execute', () => {
  const confined = createToolRegistry({ dialect: 'openai-chat', search: { ripgrepPath: null }, withoutExecutingTools: true });
  assert.deepEqual(confined.specs.map((spec) => spec.name), ALL.filter((name) => name !== 'shell' && name !== 'apply_patch'));
  assert.equal(confined.has('shell'), false);
  assert.equal(confined.has('apply_patch'), false);
  const open = createToolRegistry({ dialect: 'openai-chat', search: { ripgrepPath: null }, withoutExecutingTools: false });
  assert.deepEqual(open.specs.map((spec) => spec.name), ALL);
});

test('prepare parses, plans and classifies paths, or returns an outcome for the model', (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const registry = createToolRegistry({ dialect: 'openai-responses', search: { ripgrepPath: null } });
  const ctx = { cwd: ws.cwd, roots: [ws.root] };
  const prepared = registry.prepare({ name: 'read_file', input: '{"path":"../sibling.txt"}' }, ctx);
  assert.ok(prepared.ok);
  assert.deepEqual(prepared.call.plan, { readOnly: true, paths: ['../sibling.txt'] });
  assert.equal(prepared.call.paths[0].location, 'root');
  assert.equal(prepared.call.paths[0].resolved, path.join(ws.root, 'sibling.txt'));

  const unknown = registry.prepare({ name: 'teleport', input: '{}' }, ctx);
  assert.ok(!unknown.ok);
  assert.match(unknown.outcome.output, /Unknown tool "teleport"/);
  assert.equal(unknown.outcome.ok, false);

  const invalid = registry.prepare({ name: 'read_file', input: '{"path": 3}' }, ctx);
  assert.ok(!invalid.ok);
  assert.match(invalid.outcome.output, /Invalid call to read_file: "path" must be a non-empty string/);
});

test('run turns tool errors into failed outcomes instead of throwing', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const registry = createToolRegistry({ dialect: 'openai-chat', search: { ripgrepPath: null } });
  const ctx = makeContext(ws);
  const prepared = registry.prepare({ name: 'read_file', input: '{"path":"missing.txt"}' }, ctx);
  assert.ok(prepared.ok);
  const outcome = await registry.run(prepared.call, ctx);
  assert.deepEqual(outcome, { output: 'missing.txt does not exist', truncated: false, ok: false });
});

test('prepare → authorize → run: a patch asks, is allowed for the session, and is applied', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'a.txt'), 'old\n');
  const registry = createToolRegistry({ dialect: 'openai-responses', search: { ripgrepPath: null } });
  const ctx = makeContext(ws, { answers: [{ decision: 'allow_session' }] });
  const allowances = new Set<string>();
  const patch = '*** Begin Patch\n*** Update File: a.txt\n-old\n+new\n*** End Patch';
  for (let round = 0; round < 2; round++) {
    const prepared = registry.prepare({ name: 'apply_patch', input: round === 0 ? patch : patch.replace('-old\n+new', '-new\n+newer') }, ctx);
    assert.ok(prepared.ok);
    const authorization = await authorizeToolCall(prepared.call, { planMode: false, yolo: false, sessionAllowances: allowances, paths: prepared.call.paths, confinedExecution: false }, ctx.requestHuman);
    assert.deepEqual(authorization, { allowed: true, unattended: false });
    assert.equal((await registry.run(prepared.call, ctx)).ok, true);
  }
  assert.equal(ctx.requests.length, 1, 'the second patch ran on the session allowance');
  assert.ok(ctx.requests[0].prompt.includes(patch));
  assert.equal(readFileSync(path.join(ws.cwd, 'a.txt'), 'utf8'), 'newer\n');
});

test('prepare → authorize: a read-only command in the cwd runs without a question; one outside the roots is refused', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const registry = createToolRegistry({ dialect: 'openai-chat', search: { ripgrepPath: null } });
  const ctx = makeContext(ws);
  const policy = (paths: ReturnType<typeof registry.prepare> & { ok: true }) => ({ planMode: true, yolo: false, sessionAllowances: new Set<string>(), paths: paths.call.paths, confinedExecution: false });
  const status = registry.prepare({ name: 'shell', input: '{"command":["ls","-la"]}' }, ctx);
  assert.ok(status.ok);
  assert.deepEqual(await authorizeToolCall(status.call, policy(status), ctx.requestHuman), { allowed: true, unattended: true });
  const escape = registry.prepare({ name: 'list_dir', input: '{"path":"/etc"}' }, ctx);
  assert.ok(escape.ok);
  const refused = await authorizeToolCall(escape.call, policy(escape), ctx.requestHuman);
  assert.equal(refused.allowed, false);
  assert.equal(ctx.requests.length, 0);
});
