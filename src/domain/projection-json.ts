/**
 * Projection of opaque JSON (tool output, arguments, extension fields): kept as it is, under the
 * budget, with redaction keys replaced. It walks with an explicit stack, so no input depth can
 * exhaust the call stack, and visits each input value at most once, stopping where the budget ends.
 *
 * Containers nest at most MAX_OPAQUE_DEPTH levels below the opaque value itself; a deeper container
 * is treated like a value the budget cannot hold. That keeps responses parseable by clients whose
 * JSON decoders limit nesting (128 levels is a common default).
 */

import {
  type Owner,
  type ProjectionBudget,
  HOLLOW,
  REDACTED,
  TRUNCATION_MARKER,
  canStart,
  canStartRedaction,
  isPlainObject,
  isRedactionKey,
  markTruncated,
  refundKey,
  refundNode,
  setOwnField,
  spendKey,
  spendNode,
  spendString,
} from './projection-budget.ts';

export const MAX_OPAQUE_DEPTH = 64;

interface ArrayFrame {
  kind: 'array';
  source: readonly unknown[];
  target: unknown[];
  next: number;
  depth: number;
  /** The nearest enclosing output object, which is marked when this array is cut. */
  owner: Owner;
  cut: boolean;
}

interface ObjectFrame {
  kind: 'object';
  source: Record<string, unknown>;
  target: Record<string, unknown>;
  keys: string[];
  next: number;
  depth: number;
  emitted: number;
  cut: boolean;
}

type Frame = ArrayFrame | ObjectFrame;

/** Whether a value is representable in JSON at all; functions, symbols, bigints and undefined are not. */
export function isJsonLike(value: unknown): boolean {
  const kind = typeof value;
  return kind === 'string' || kind === 'number' || kind === 'boolean' || kind === 'object';
}

/**
 * Projects a value that passed canStart and whose key, if any, is paid for. Returns HOLLOW (with
 * the value's node refunded) when the value is a container cut before its first child.
 */
export function projectOpaque(value: unknown, budget: ProjectionBudget, owner: Owner): unknown {
  const stack: Frame[] = [];
  const root = open(value, budget, owner, 0, stack);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (!frame.cut && advance(frame, budget, stack)) continue;
    stack.pop();
    if (!isHollow(frame)) continue;
    const parent = stack[stack.length - 1];
    if (parent === undefined) {
      refundNode(budget);
      return HOLLOW;
    }
    removeLastChild(parent, budget);
  }
  return root;
}

function advance(frame: Frame, budget: ProjectionBudget, stack: Frame[]): boolean {
  return frame.kind === 'array' ? advanceArray(frame, budget, stack) : advanceObject(frame, budget, stack);
}

function isHollow(frame: Frame): boolean {
  return frame.cut && (frame.kind === 'array' ? frame.target.length : frame.emitted) === 0;
}

/** Takes a hollow child out of its parent, which then stops there and is marked. */
function removeLastChild(parent: Frame, budget: ProjectionBudget): void {
  parent.cut = true;
  if (parent.kind === 'array') {
    parent.target.pop();
    refundNode(budget);
    markTruncated(budget, parent.owner);
    return;
  }
  const key = parent.keys[parent.next - 1];
  delete parent.target[key];
  parent.emitted -= 1;
  refundNode(budget);
  refundKey(budget, key);
  markTruncated(budget, parent.target);
}

function open(value: unknown, budget: ProjectionBudget, owner: Owner, depth: number, stack: Frame[]): unknown {
  if (typeof value === 'string') return spendString(budget, value, owner);
  spendNode(budget);
  if (Array.isArray(value)) {
    const target: unknown[] = [];
    stack.push({ kind: 'array', source: value, target, next: 0, depth, owner, cut: false });
    return target;
  }
  if (isPlainObject(value)) {
    const target: Record<string, unknown> = {};
    const keys = Object.keys(value);
    // Stryker disable next-line StringLiteral: only 'array' is ever compared, so an object frame of any other kind is the same
    stack.push({ kind: 'object', source: value, target, keys, next: 0, depth, emitted: 0, cut: false });
    return target;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'boolean') return value;
  return null;
}

function fitsAt(budget: ProjectionBudget, keyLength: number, value: unknown, depth: number): boolean {
  const isContainer = typeof value === 'object' && value !== null;
  if (isContainer && depth > MAX_OPAQUE_DEPTH) return false;
  return canStart(budget, keyLength, value);
}

function advanceArray(frame: ArrayFrame, budget: ProjectionBudget, stack: Frame[]): boolean {
  if (frame.next >= frame.source.length) return false;
  const element = frame.source[frame.next];
  if (!fitsAt(budget, 0, element, frame.depth + 1)) {
    frame.cut = true;
    markTruncated(budget, frame.owner);
    // Stryker disable next-line BooleanLiteral: `true` makes the walk visit the frame again, which it finds cut and pops, as it does now
    return false;
  }
  frame.next += 1;
  frame.target.push(open(element, budget, frame.owner, frame.depth + 1, stack));
  return true;
}

function advanceObject(frame: ObjectFrame, budget: ProjectionBudget, stack: Frame[]): boolean {
  while (frame.next < frame.keys.length) {
    const key = frame.keys[frame.next];
    frame.next += 1;
    if (key === TRUNCATION_MARKER) continue;
    const raw = frame.source[key];
    if (!isJsonLike(raw)) continue;
    const redacted = isRedactionKey(key);
    const value = redacted ? REDACTED : raw;
    const fits = redacted ? canStartRedaction(budget, key.length) : fitsAt(budget, key.length, value, frame.depth + 1);
    if (!fits) {
      frame.cut = true;
      markTruncated(budget, frame.target);
      // Stryker disable next-line BooleanLiteral: `true` makes the walk visit the frame again, which it finds cut and pops, as it does now
      return false;
    }
    frame.emitted += 1;
    spendKey(budget, key);
    setOwnField(frame.target, key, open(value, budget, frame.target, frame.depth + 1, stack));
    return true;
  }
  return false;
}
