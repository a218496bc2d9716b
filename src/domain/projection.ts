/**
 * Projection of stored history and child-agent state into bounded, redacted response data
 * (SPEC.md §2 "History projection rules", CONTRACT.md §8).
 *
 * One ProjectionBudget covers one history turn: project its `items`, `displayItems` and any other
 * text fields with the same budget object, then mark the turn `projectionTruncated: true` when
 * `budget.truncated` is set (arrays cannot carry the marker; nested objects already carry their own).
 *
 * Decisions the SPEC leaves open:
 * - An item, content part, action or summary entry that is not an object with a string `type` (of
 *   at most 16,383 characters) is dropped: it is not a tagged value a client could decode. Dropping
 *   it is not a cut and sets no marker. The same holds for a value of the wrong type in a field the SPEC types.
 * - Every value is a node, the top-level arrays included. Cut strings get no ellipsis (the marker
 *   on the enclosing object says they were cut) and keep at least their first code point.
 * - A container cut before its first child is removed again (see projection-budget.ts), so no
 *   hollow `{ projectionTruncated: true }` stands in for content once the text budget is spent.
 * - Opaque JSON nests at most MAX_OPAQUE_DEPTH containers deep (see projection-json.ts); the walk
 *   uses an explicit stack, so depth never threatens the call stack.
 * - An input key named `projectionTruncated` is never copied, so the marker is always ours.
 */

import {
  type ProjectionBudget,
  HOLLOW,
  createProjectionBudget,
  markTruncated,
  canStart,
  spendString,
} from './projection-budget.ts';
import { historyItems } from './projection-items.ts';
import { projectOpaque, isJsonLike } from './projection-json.ts';
import { type Shape, arrayOf, fields, nullable, record, text } from './projection-shapes.ts';

export { type ProjectionBudget, createProjectionBudget } from './projection-budget.ts';
export { MAX_OPAQUE_DEPTH } from './projection-json.ts';
export { OPAQUE_ITEM_TYPES } from './projection-items.ts';

const MAX_PROJECTED_AGENTS = 100;
const MAX_PROJECTED_STEPS = 100;

export interface AgentStep {
  state: 'running' | 'completed' | 'failed' | 'info';
  title: string;
  detail: string | null;
}

export interface AgentRecord {
  path: string;
  status: string;
  model: string | null;
  steps: AgentStep[];
}

/** Projects a history turn's `items` or `displayItems`; a non-array projects to []. */
export function projectHistoryItems(items: unknown[], budget: ProjectionBudget): unknown[] {
  return projectTopLevel(historyItems, items, budget);
}

/** Projects one text field of a history turn (userText, assistantText, …) with the turn's budget. */
export function projectText(value: string, budget: ProjectionBudget): string {
  if (!canStart(budget, 0, value)) {
    markTruncated(budget, null);
    return '';
  }
  return spendString(budget, value, null);
}

/** Projects any other JSON value of a history turn (error, providerTelemetry, …); null when nothing fits. */
export function projectJson(value: unknown, budget: ProjectionBudget): unknown {
  if (!isJsonLike(value)) return null;
  if (!canStart(budget, 0, value)) {
    markTruncated(budget, null);
    return null;
  }
  const projected = projectOpaque(value, budget, null);
  return projected === HOLLOW ? null : projected;
}

const agentStep = record(fields({ state: text, title: text, detail: nullable(text) }));
const agent = record(
  fields({ path: text, status: text, model: nullable(text), steps: arrayOf(agentStep, MAX_PROJECTED_STEPS) }),
);
const agentList = arrayOf(agent, MAX_PROJECTED_AGENTS);

/**
 * The body list of GET /v1/turns/:id/agents: at most 100 agents of at most 100 steps, within a
 * 64 Ki-character / 2,048-node budget. Transcripts and other fields are never included. A caller
 * that wants to mark the response envelope passes its own budget and reads `budget.truncated`.
 */
export function projectAgents(agents: AgentRecord[], budget = createProjectionBudget()): unknown[] {
  return projectTopLevel(agentList, agents, budget);
}

function projectTopLevel(shape: Shape, value: unknown, budget: ProjectionBudget): unknown[] {
  if (!shape.accepts(value)) return [];
  if (!shape.fits(value, 0, budget)) {
    if ((value as unknown[]).length > 0) markTruncated(budget, null);
    return [];
  }
  const projected = shape.emit(value, budget, null);
  return projected === HOLLOW ? [] : (projected as unknown[]);
}
