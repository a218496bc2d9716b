import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type AgentRecord, createProjectionBudget, projectAgents } from '../../src/domain/projection.ts';

type Json = Record<string, any>;

function agentWith(steps: number, path = '/root'): AgentRecord {
  return {
    path,
    status: 'running',
    model: 'gpt-test',
    steps: Array.from({ length: steps }, (_, index) => ({ state: 'completed' as const, title: `s${index}`, detail: null })),
  };
}

describe('projectAgents', () => {
  it('keeps path, status, model and steps, and nothing else', () => {
    const record = {
      path: '/root/worker',
      status: 'completed',
      model: null,
      steps: [
        { state: 'running', title: 'Read files', detail: 'src/a.ts', transcript: ['x'] },
        { state: 'info', title: 'Note', detail: null },
      ],
      transcript: [{ role: 'user', content: 'hidden' }],
      uiState: { open: true },
    };
    assert.deepEqual(projectAgents([record as AgentRecord]), [
      {
        path: '/root/worker',
        status: 'completed',
        model: null,
        steps: [
          { state: 'running', title: 'Read files', detail: 'src/a.ts' },
          { state: 'info', title: 'Note', detail: null },
        ],
      },
    ]);
  });

  it('keeps 100 agents and drops the 101st', () => {
    const budget = createProjectionBudget();
    const agents = Array.from({ length: 101 }, (_, index) => agentWith(0, `/a${index}`));
    const projected = projectAgents(agents, budget) as Json[];
    assert.equal(projected.length, 100);
    assert.equal(projected[99].path, '/a99');
    assert.equal(budget.truncated, true);
  });

  it('keeps exactly 100 agents without calling it a cut', () => {
    const budget = createProjectionBudget();
    assert.equal(projectAgents(Array.from({ length: 100 }, () => agentWith(0)), budget).length, 100);
    assert.equal(budget.truncated, false);
  });

  it('keeps 100 steps and marks the agent that had 101', () => {
    const [exact] = projectAgents([agentWith(100)]) as Json[];
    assert.equal(exact.steps.length, 100);
    assert.equal(exact.projectionTruncated, undefined);
    const [over] = projectAgents([agentWith(101)]) as Json[];
    assert.equal(over.steps.length, 100);
    assert.equal(over.projectionTruncated, true);
  });

  it('stops at 2,048 nodes and marks the agent being cut', () => {
    const budget = createProjectionBudget();
    const projected = projectAgents(Array.from({ length: 100 }, (_, index) => agentWith(100, `/a${index}`)), budget) as Json[];
    // Per agent: object, path, status, model, steps array = 5 nodes; per step 4 nodes.
    const perFullAgent = 5 + 100 * 4;
    const fullAgents = Math.floor((2048 - 1) / perFullAgent);
    assert.equal(projected.length, fullAgents + 1);
    assert.equal(projected[fullAgents].projectionTruncated, true);
    assert.equal(projected[fullAgents].steps.length, Math.floor((2048 - 1 - fullAgents * perFullAgent - 5) / 4));
    assert.equal(budget.nodes < 4, true);
    assert.equal(budget.truncated, true);
  });

  it('uses a 64 Ki-character text budget and cuts long strings at 16,383', () => {
    const budget = createProjectionBudget();
    const long = 't'.repeat(20_000);
    const [agent] = projectAgents(
      [{ path: '/p', status: 's', model: null, steps: Array.from({ length: 6 }, () => ({ state: 'info', title: long, detail: null })) }],
      budget,
    ) as Json[];
    assert.equal(agent.steps[0].title.length, 16383);
    assert.equal(agent.steps[0].projectionTruncated, true);
    // Agent keys and values: 23 characters; each step: "state" "info" "title" "detail" = 20 plus its title.
    assert.equal(agent.steps.length, 4);
    assert.equal(agent.steps[3].title.length, 65536 - 23 - 3 * (20 + 16383) - 14);
    assert.deepEqual(Object.keys(agent.steps[3]).sort(), ['projectionTruncated', 'state', 'title']);
    assert.equal(budget.textChars, 0);
    assert.equal(agent.projectionTruncated, true);
  });

  it('returns an empty list for no agents', () => {
    assert.deepEqual(projectAgents([]), []);
  });
});
