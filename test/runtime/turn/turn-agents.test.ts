import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_AGENT_DEPTH, MAX_CHILD_AGENTS, MAX_STEP_DETAIL_CHARS, TurnAgents, type ChildAgent } from '../../../src/runtime/turn/turn-agents.ts';
import { projectAgents, createProjectionBudget } from '../../../src/domain/projection.ts';

const run = { reportedModel: null, usage: null, durationMs: 1, apiDurationMs: 1, stopReason: null, providerTurns: 1 };

describe('the child agents of a turn', () => {
  it('nests at most three levels below the main agent and joins the labels into the path', () => {
    const agents = new TurnAgents();
    let parent: ChildAgent | null = null;
    for (let depth = 1; depth <= MAX_AGENT_DEPTH; depth++) {
      const child = agents.admit(`a${depth}`, parent, `l${depth}`, 'm');
      assert.ok(typeof child !== 'string');
      parent = child;
    }
    assert.equal(parent!.path, 'l1/l2/l3');
    assert.match(agents.admit('a4', parent, 'l4', 'm') as string, /at most 3 levels/);
  });

  it('admits 100 children, refuses the 101st, and projects them within the budgets', () => {
    const agents = new TurnAgents();
    for (let index = 0; index < MAX_CHILD_AGENTS; index++) {
      const child = agents.admit(`id${index}`, null, `agent-${index}`, 'm') as ChildAgent;
      for (let step = 0; step < 150; step++) agents.addStep(child, 'completed', `step ${step}`, 'x'.repeat(5_000));
      agents.finish(child, 'completed', run);
    }
    assert.match(agents.admit('one-more', null, 'late', 'm') as string, /at most 100 agents/);
    const view = agents.view();
    assert.equal(view.length, 100);
    assert.equal(view[0]!.steps.length, 101, 'one step past the projection is kept, so the projection can say it cut');
    assert.equal(view[0]!.steps[0]!.detail!.length, MAX_STEP_DETAIL_CHARS + 1, 'a detail is a glimpse');
    assert.equal(agents.childRuns().length, 100);

    const budget = createProjectionBudget();
    const projected = projectAgents(view, budget) as any[];
    assert.equal(budget.truncated, true);
    const text = JSON.stringify(projected);
    assert.ok(text.length < 70_000, `${text.length} characters`);
    assert.ok(projected.length < 100);
    assert.equal(projected.at(-1).projectionTruncated, true);
  });

  it('projects at most 100 steps per agent and 2,048 nodes', () => {
    const agents = new TurnAgents();
    const child = agents.admit('id', null, 'many-steps', null) as ChildAgent;
    for (let step = 0; step < 120; step++) agents.addStep(child, 'info', 's', null);
    const budget = createProjectionBudget();
    const [projected] = projectAgents(agents.view(), budget) as any[];
    assert.equal(projected.steps.length, 100);
    assert.equal(projected.projectionTruncated, true);

    const wide = new TurnAgents();
    for (let index = 0; index < 100; index++) {
      const each = wide.admit(`w${index}`, null, 'w', null) as ChildAgent;
      for (let step = 0; step < 100; step++) wide.addStep(each, 'info', '', null);
    }
    const nodes = createProjectionBudget();
    const cut = projectAgents(wide.view(), nodes) as any[];
    assert.equal(nodes.truncated, true);
    const count = (value: unknown): number => (Array.isArray(value) ? 1 + value.reduce((sum: number, item) => sum + count(item), 0) : value && typeof value === 'object' ? 1 + Object.values(value).reduce((sum: number, item) => sum + count(item), 0) : 1);
    assert.ok(count(cut) <= 2_048, `${count(cut)} nodes`);
  });
});
