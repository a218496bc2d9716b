/**
 * The budget of a projection (CONTRACT.md §8) and the few primitives that spend it. One budget is
 * shared by everything projected for one history turn (or one agent list), so it is a mutable
 * object handed through every call.
 *
 * Accounting: every emitted value (object, array, string, number, boolean, null) costs one node;
 * every emitted string costs its kept length and every emitted object key its length in text
 * characters. A value is only started when its node, its whole key and (for a non-empty string) at
 * least one character fit; otherwise the budget has run out at that point, the rest of the
 * enclosing array or object is dropped and the nearest enclosing object is marked
 * `projectionTruncated: true`. The marker itself is free.
 *
 * A container cut before its first child would be a hollow stand-in for content, so it is removed
 * again (its node and key refunded) and the container holding it stops there, marked instead.
 */

import { EVENT_TEXT_LIMIT, cutAtCodeUnits } from './event-text.ts';

export interface ProjectionBudget {
  /** Text characters still available for string values and object keys. */
  textChars: number;
  /** Values still available. */
  nodes: number;
  /** Set once anything was cut or dropped for budget or length reasons, anywhere. */
  truncated: boolean;
}

const HISTORY_TEXT_BUDGET = 65536;
const HISTORY_NODE_BUDGET = 2048;
/** Longest single string a projection keeps. */
export const PROJECTION_STRING_LIMIT = EVENT_TEXT_LIMIT;
export const REDACTED = '<redacted>';
/** Output key marking an object something was cut from; never copied from input. */
export const TRUNCATION_MARKER = 'projectionTruncated';

export function createProjectionBudget(
  textChars = HISTORY_TEXT_BUDGET,
  nodes = HISTORY_NODE_BUDGET,
): ProjectionBudget {
  return { textChars, nodes, truncated: false };
}

/** The object that receives the marker when something inside it is cut; null at the top level. */
export type Owner = Record<string, unknown> | null;

export function markTruncated(budget: ProjectionBudget, owner: Owner): void {
  budget.truncated = true;
  if (owner !== null) owner[TRUNCATION_MARKER] = true;
}

/** Result of emitting a container that was cut before its first child; its cost is already refunded. */
export const HOLLOW: unique symbol = Symbol('hollow');

/** Whether a value can start under a key of `keyLength` characters (0 for array elements). */
export function canStart(budget: ProjectionBudget, keyLength: number, value: unknown): boolean {
  if (budget.nodes < 1) return false;
  const firstCharacter = typeof value === 'string' ? firstCodePointLength(value) : 0;
  return keyLength + firstCharacter <= budget.textChars;
}

/** A cut string keeps at least its first whole code point, so a started string is never emptied. */
function firstCodePointLength(text: string): number {
  if (text.length === 0) return 0;
  return text.codePointAt(0)! > 0xffff ? 2 : 1;
}

/** Gives back the node of a hollow container. */
export function refundNode(budget: ProjectionBudget): void {
  budget.nodes += 1;
}

/** Gives back the key of a hollow container's field. */
export function refundKey(budget: ProjectionBudget, key: string): void {
  budget.textChars += key.length;
}

/** A redaction marker is kept whole or not at all: a cut "<reda" would only confuse. */
export function canStartRedaction(budget: ProjectionBudget, keyLength: number): boolean {
  return budget.nodes >= 1 && keyLength + REDACTED.length <= budget.textChars;
}

export function spendNode(budget: ProjectionBudget): void {
  budget.nodes -= 1;
}

export function spendKey(budget: ProjectionBudget, key: string): void {
  budget.textChars -= key.length;
}

/** Emits a string that passed canStart, cut to the single-string limit or the remaining text. */
export function spendString(budget: ProjectionBudget, text: string, owner: Owner): string {
  budget.nodes -= 1;
  const kept = cutAtCodeUnits(text, Math.min(PROJECTION_STRING_LIMIT, budget.textChars));
  budget.textChars -= kept.length;
  if (kept.length < text.length) markTruncated(budget, owner);
  return kept;
}

const REDACTION_KEYS = new Set([
  'encrypted_content',
  'encryptedcontent',
  'encrypted_function_args',
  'encryptedfunctionargs',
]);
const LONGEST_REDACTION_KEY = 'encrypted_function_args'.length;

export function isRedactionKey(key: string): boolean {
  // a long key is not lower-cased only to be looked up in vain
  // Stryker disable next-line ConditionalExpression: `false` lower-cases every key, and one longer than every redaction key is still none of them; the `true` twin, killed, shares the line
  if (key.length > LONGEST_REDACTION_KEY) return false;
  return REDACTION_KEYS.has(key.toLowerCase());
}

/** Assigns an own property even for the key `__proto__`, which plain assignment would not. */
export function setOwnField(target: Record<string, unknown>, key: string, value: unknown): void {
  // Stryker disable next-line ConditionalExpression: `true` defines every key as the same own, enumerable, writable field an assignment makes; the `false` twin, killed, shares the line
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
