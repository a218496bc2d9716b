import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authorizeToolCall, DENIED_OUTPUT } from '../../../src/agent/policy/authorize.ts';
import type { PolicyCall } from '../../../src/agent/policy/decide.ts';
import type { HumanDecision, HumanRequestKind } from '../../../src/agent/tools/types.ts';
import type { PathClassification } from '../../../src/workspace/paths.ts';

const inCwd: PathClassification = { requested: '.', resolved: '/ws/p', location: 'cwd', root: '/ws', exists: true };
const inRoot: PathClassification = { requested: '../q', resolved: '/ws/q', location: 'root', root: '/ws', exists: true };
const npmTest: PolicyCall = { name: 'shell', input: '{"command":"npm test"}', plan: { readOnly: false, paths: ['.'], command: 'npm test' } };

function human(...answers: HumanDecision[]) {
  const asked: HumanRequestKind[] = [];
  return {
    asked,
    requestHuman: async (kind: HumanRequestKind) => {
      asked.push(kind);
      return answers.shift() ?? { decision: 'deny' };
    },
  };
}

test('allow_session runs the call and remembers its key; the next call with that prefix does not ask', async () => {
  const allowances = new Set<string>();
  const first = human({ decision: 'allow_session' });
  assert.deepEqual(await authorizeToolCall(npmTest, { planMode: false, yolo: false, sessionAllowances: allowances, paths: [inCwd], confinedExecution: false }, first.requestHuman), { allowed: true, unattended: false });
  assert.deepEqual([...allowances], ['shell:npm test']);
  const second = human();
  const again = { ...npmTest, plan: { ...npmTest.plan, command: 'npm test -- --watch=false' } };
  assert.deepEqual(await authorizeToolCall(again, { planMode: false, yolo: false, sessionAllowances: allowances, paths: [inCwd], confinedExecution: false }, second.requestHuman), { allowed: true, unattended: false });
  assert.deepEqual(second.asked, []);
});

test('allow_once runs without remembering; deny returns an output for the model', async () => {
  const allowances = new Set<string>();
  const once = human({ decision: 'allow_once' });
  assert.deepEqual(await authorizeToolCall(npmTest, { planMode: false, yolo: false, sessionAllowances: allowances, paths: [inCwd], confinedExecution: false }, once.requestHuman), { allowed: true, unattended: false });
  assert.equal(allowances.size, 0);
  const denied = human({ decision: 'deny' });
  assert.deepEqual(await authorizeToolCall(npmTest, { planMode: false, yolo: false, sessionAllowances: allowances, paths: [inCwd], confinedExecution: false }, denied.requestHuman), { allowed: false, output: DENIED_OUTPUT });
});

test('root_access is asked before tool_approval, and a denial stops there', async () => {
  const both = human({ decision: 'allow' }, { decision: 'allow_once' });
  const ctx = { planMode: false, yolo: false, sessionAllowances: new Set<string>(), paths: [inRoot], confinedExecution: false };
  assert.deepEqual(await authorizeToolCall(npmTest, ctx, both.requestHuman), { allowed: true, unattended: false });
  assert.deepEqual(both.asked, ['root_access', 'tool_approval']);
  const refused = human({ decision: 'deny' });
  assert.deepEqual(await authorizeToolCall(npmTest, ctx, refused.requestHuman), { allowed: false, output: DENIED_OUTPUT });
  assert.deepEqual(refused.asked, ['root_access']);
});

test('refusals never reach the human', async () => {
  const nobody = human();
  const result = await authorizeToolCall(
    { ...npmTest, plan: { ...npmTest.plan, command: 'rm -rf ~' } },
    { planMode: false, yolo: true, sessionAllowances: new Set(), paths: [inCwd], confinedExecution: false },
    nobody.requestHuman,
  );
  assert.equal(result.allowed, false);
  assert.deepEqual(nobody.asked, []);
});
