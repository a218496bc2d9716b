import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askQuestionTool, enterPlanModeTool, exitPlanModeTool } from '../../../src/agent/tools/plan-mode.ts';
import { updatePlanTool } from '../../../src/agent/tools/update-plan.ts';
import { ToolError, type HumanDecision, type Tool } from '../../../src/agent/tools/types.ts';
import { makeContext, makeWorkspace } from './context.ts';

async function runWith<A>(tool: Tool<A>, input: object, answers: HumanDecision[], planMode = false) {
  const ws = makeWorkspace();
  try {
    const ctx = makeContext(ws, { answers, planMode });
    const outcome = await tool.run(tool.parse(JSON.stringify(input)), ctx);
    return { outcome, requests: ctx.requests };
  } finally {
    ws.cleanup();
  }
}

test('update_plan records the plan as an effect and answers "Plan updated"', async () => {
  const input = { explanation: 'why', plan: [{ step: 'read', status: 'completed' }, { step: 'write', status: 'in_progress' }] };
  const { outcome } = await runWith(updatePlanTool, input, []);
  assert.equal(outcome.output, 'Plan updated');
  assert.deepEqual(outcome.effects, {
    plan: { explanation: 'why', steps: [{ step: 'read', status: 'completed' }, { step: 'write', status: 'in_progress' }] },
  });
  assert.throws(() => updatePlanTool.parse(JSON.stringify({ plan: [{ step: 'a', status: 'done' }] })), /"plan\[0\]\.status" must be one of pending, in_progress, completed/);
  assert.throws(() => updatePlanTool.parse(JSON.stringify({ plan: [{ step: 'a', status: 'in_progress' }, { step: 'b', status: 'in_progress' }] })), /at most one/);
  assert.throws(() => updatePlanTool.parse('{}'), ToolError);
});

test('enter_plan_mode asks plan_enter with enter/stay and reports the decision', async () => {
  const entered = await runWith(enterPlanModeTool, { reason: 'big refactor' }, [{ decision: 'enter' }]);
  assert.deepEqual(entered.requests.map((r) => [r.kind, r.options]), [['plan_enter', ['enter', 'stay']]]);
  assert.match(entered.requests[0].prompt, /big refactor/);
  assert.deepEqual(entered.outcome.effects, { planMode: 'enter' });
  assert.match(entered.outcome.output, /now in plan mode/);

  const stayed = await runWith(enterPlanModeTool, { reason: 'x' }, [{ decision: 'stay' }]);
  assert.equal(stayed.outcome.effects, undefined);
  assert.match(stayed.outcome.output, /declined/);

  const already = await runWith(enterPlanModeTool, { reason: 'x' }, [], true);
  assert.equal(already.requests.length, 0);
  assert.match(already.outcome.output, /already in plan mode/);
});

test('exit_plan_mode shows the whole plan and handles approve, request_changes with feedback, and cancel', async () => {
  const plan = `1. step one\n${'long detail '.repeat(1000)}\n2. step two`;
  const approved = await runWith(exitPlanModeTool, { plan }, [{ decision: 'approve' }], true);
  assert.equal(approved.requests[0].kind, 'plan_exit');
  assert.deepEqual(approved.requests[0].options, ['approve', 'request_changes', 'cancel']);
  assert.ok(approved.requests[0].prompt.endsWith(plan), 'the complete plan is in the prompt');
  assert.deepEqual(approved.outcome.effects, { planMode: 'exit' });

  const changes = await runWith(exitPlanModeTool, { plan }, [{ decision: 'request_changes', value: 'use a queue instead' }], true);
  assert.match(changes.outcome.output, /asked for changes[\s\S]*use a queue instead/);
  assert.equal(changes.outcome.effects, undefined);

  const cancelled = await runWith(exitPlanModeTool, { plan }, [{ decision: 'cancel' }], true);
  assert.match(cancelled.outcome.output, /cancelled the plan/);
  assert.equal(cancelled.outcome.effects, undefined);
});

test('ask_question offers the model options then custom, and returns the answer', async () => {
  const picked = await runWith(askQuestionTool, { question: 'Which database?', options: ['SQLite', 'PostgreSQL'] }, [{ decision: 'PostgreSQL' }]);
  assert.deepEqual(picked.requests[0], { kind: 'plan_question', prompt: 'Which database?', options: ['SQLite', 'PostgreSQL', 'custom'] });
  assert.equal(picked.outcome.output, 'The user chose: PostgreSQL');

  const custom = await runWith(askQuestionTool, { question: 'Which database?', options: ['SQLite'] }, [{ decision: 'custom', value: 'DuckDB' }]);
  assert.equal(custom.outcome.output, 'The user answered in their own words:\nDuckDB');

  assert.throws(() => askQuestionTool.parse(JSON.stringify({ question: 'q', options: ['a', 'a'] })), /distinct/);
  assert.throws(() => askQuestionTool.parse(JSON.stringify({ question: 'q', options: ['custom'] })), /reserved/);
  assert.throws(() => askQuestionTool.parse(JSON.stringify({ question: 'q', options: Array.from({ length: 100 }, (_, i) => `o${i}`) })), /at most 99/);
});

test('ask_question at its edges: 99 options and 100, options trimmed before they are compared, custom reserved in any spacing', () => {
  const parse = (options: string[]) => askQuestionTool.parse(JSON.stringify({ question: 'q', options }));
  const ninetyNine = Array.from({ length: 99 }, (_, i) => `o${i}`);
  assert.deepEqual(parse(ninetyNine).options, ninetyNine, 'with custom, a HumanRequest of exactly 100 options');
  assert.throws(() => parse([...ninetyNine, 'o99']), /at most 99/);
  assert.deepEqual(parse([]), { question: 'q', options: [] });
  assert.deepEqual(parse(['  a ', 'b']), { question: 'q', options: ['a', 'b'] }, 'kept trimmed');
  for (const options of [[' '], ['a', ''], ['\t\n']]) assert.throws(() => parse(options), /must not be empty strings/, JSON.stringify(options));
  for (const options of [['a', ' a'], ['a ', 'a'], ['x', 'y', 'x']]) assert.throws(() => parse(options), /must be distinct/, JSON.stringify(options));
  for (const options of [['custom'], [' custom '], ['a', 'custom\n']]) assert.throws(() => parse(options), /"custom" is reserved/, JSON.stringify(options));
  for (const options of [['Custom'], ['customs'], ['custom answer']]) assert.deepEqual(parse(options).options, options, 'only custom itself is reserved');
});

test('ask_question refuses an empty question and fields it does not know', () => {
  assert.throws(() => askQuestionTool.parse(JSON.stringify({ question: '', options: [] })), ToolError);
  assert.throws(() => askQuestionTool.parse(JSON.stringify({ question: 'q', options: [], extra: 1 })), ToolError);
  assert.deepEqual(askQuestionTool.parse(JSON.stringify({ question: 'q', options: [] })), { question: 'q', options: [] });
});
