import type { AgentRun } from '../../agent/telemetry.ts';
import type { AgentRecord, AgentStep } from '../../domain/projection.ts';

/** CONTRACT.md §13: children of children, at most three levels below the main agent. */
export const MAX_AGENT_DEPTH = 3;
/** CONTRACT.md §13: child agents one turn may start (the main agent is not counted). */
export const MAX_CHILD_AGENTS = 100;
/** the view projects 100 steps; one more is kept so the projection can say it cut the rest */
const MAX_KEPT_STEPS = 101;
/** a step's detail is a glimpse (arguments, output, answer), never a transcript */
export const MAX_STEP_DETAIL_CHARS = 2_000;

export type AgentStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/** One child agent of a turn as this process holds it while the turn is held. */
export interface ChildAgent {
  readonly id: string;
  /** null for a child of the main agent */
  readonly parentId: string | null;
  readonly label: string;
  /** the labels from the main agent down, joined by `/` */
  readonly path: string;
  /** 1 for a child of the main agent */
  readonly depth: number;
  readonly model: string | null;
  status: AgentStatus;
  readonly steps: AgentStep[];
}

/** Where a new child would hang: the main agent (null) or another child. */
export type AgentParent = ChildAgent | null;

/**
 * The child agents of one turn: admission against the depth and count limits, their status and
 * steps for GET /v1/turns/:id/agents, and what their model requests came to, for the turn's usage
 * and telemetry. Pure state; the supervisor (runtime/turn/agents.ts) runs the agents.
 */
export class TurnAgents {
  private readonly children: ChildAgent[] = [];
  private readonly runs: AgentRun[] = [];
  /** told after every change of the view (--cluster: the view is stored for the other instances) */
  private changed: () => void = () => {};

  watch(changed: () => void): void {
    this.changed = changed;
  }

  /** A new running child, or why it may not start (the text the parent's model reads). */
  admit(id: string, parent: AgentParent, label: string, model: string | null): ChildAgent | string {
    const depth = (parent?.depth ?? 0) + 1;
    if (depth > MAX_AGENT_DEPTH) return `spawn_agent refused: agents may nest at most ${MAX_AGENT_DEPTH} levels deep; do this work yourself.`;
    if (this.children.length >= MAX_CHILD_AGENTS) return `spawn_agent refused: a turn may start at most ${MAX_CHILD_AGENTS} agents; do this work yourself.`;
    const child: ChildAgent = { id, parentId: parent?.id ?? null, label, path: parent ? `${parent.path}/${label}` : label, depth, model, status: 'running', steps: [] };
    this.children.push(child);
    this.changed();
    return child;
  }

  /** Records a step of a child; the returned step may be settled later (a tool call that runs). */
  addStep(child: ChildAgent, state: AgentStep['state'], title: string, detail: string | null): AgentStep {
    const step: AgentStep = { state, title, detail: detail === null ? null : glimpse(detail) };
    if (child.steps.length >= MAX_KEPT_STEPS) child.steps[MAX_KEPT_STEPS - 1] = step;
    else child.steps.push(step);
    this.changed();
    return step;
  }

  settleStep(step: AgentStep, state: AgentStep['state'], detail: string | null): void {
    step.state = state;
    step.detail = detail === null ? null : glimpse(detail);
    this.changed();
  }

  /** The child ended; its requests count in the turn's usage and telemetry. */
  finish(child: ChildAgent, status: Exclude<AgentStatus, 'running'>, run: AgentRun): void {
    child.status = status;
    this.runs.push(run);
    this.changed();
  }

  /** The runs of every child that ended, in the order they ended. */
  childRuns(): AgentRun[] {
    return [...this.runs];
  }

  /** What the agent projection is made from: path, status, model and steps of every child. */
  view(): AgentRecord[] {
    return this.children.map((child) => ({ path: child.path, status: child.status, model: child.model, steps: child.steps.map((step) => ({ ...step })) }));
  }
}

function glimpse(text: string): string {
  return text.length <= MAX_STEP_DETAIL_CHARS ? text : `${text.slice(0, MAX_STEP_DETAIL_CHARS)}…`;
}
