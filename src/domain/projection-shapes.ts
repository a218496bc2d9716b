/**
 * Small combinators describing which fields a known history structure keeps and of what type.
 * A value of the wrong type is left out without using budget (clients decode the listed types);
 * fields the SPEC lists without a type are kept as opaque JSON. Known structures nest only a few
 * levels, so these recurse; everything open-ended goes through the stack-based opaque projector.
 */

import {
  type Owner,
  type ProjectionBudget,
  HOLLOW,
  PROJECTION_STRING_LIMIT,
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
import { isJsonLike, projectOpaque } from './projection-json.ts';

export interface Shape {
  /** Whether the input value has this shape; one that does not is left out. */
  accepts(value: unknown): boolean;
  /** Whether the value can start under a key of `keyLength` characters. */
  fits(value: unknown, keyLength: number, budget: ProjectionBudget): boolean;
  /**
   * Emits an accepted value that fits, once its key is paid for; `owner` gets the marker on cuts.
   * Returns HOLLOW, with the value's own cost refunded, for a container cut before its first child.
   */
  emit(value: unknown, budget: ProjectionBudget, owner: Owner): unknown;
}

export type FieldList = ReadonlyArray<readonly [key: string, shape: Shape]>;

const fitsOneValue = (value: unknown, keyLength: number, budget: ProjectionBudget): boolean =>
  canStart(budget, keyLength, value);

export const text: Shape = {
  accepts: (value) => typeof value === 'string',
  fits: fitsOneValue,
  emit: (value, budget, owner) => spendString(budget, value as string, owner),
};

function leaf(accepts: (value: unknown) => boolean): Shape {
  return {
    accepts,
    fits: fitsOneValue,
    emit: (value, budget) => {
      spendNode(budget);
      return value;
    },
  };
}

export const integer = leaf((value) => Number.isSafeInteger(value));
export const boolean = leaf((value) => typeof value === 'boolean');

export const opaque: Shape = {
  accepts: isJsonLike,
  fits: fitsOneValue,
  emit: projectOpaque,
};

const redacted: Shape = {
  accepts: () => true,
  fits: (_value, keyLength, budget) => canStartRedaction(budget, keyLength),
  emit: (_value, budget) => {
    spendNode(budget);
    budget.textChars -= REDACTED.length;
    return REDACTED;
  },
};

export function nullable(shape: Shape): Shape {
  return {
    accepts: (value) => value === null || shape.accepts(value),
    fits: (value, keyLength, budget) => shape.fits(value, keyLength, budget),
    emit: (value, budget, owner) => (value === null ? leafNull(budget) : shape.emit(value, budget, owner)),
  };
}

function leafNull(budget: ProjectionBudget): null {
  spendNode(budget);
  return null;
}

/** A value of either shape, tried in order. */
export function either(first: Shape, second: Shape): Shape {
  const pick = (value: unknown): Shape => (first.accepts(value) ? first : second);
  return {
    accepts: (value) => first.accepts(value) || second.accepts(value),
    fits: (value, keyLength, budget) => pick(value).fits(value, keyLength, budget),
    emit: (value, budget, owner) => pick(value).emit(value, budget, owner),
  };
}

/** An array of elements of one shape; others are left out. More than `maxLength` is a cut. */
export function arrayOf(element: Shape, maxLength = Number.POSITIVE_INFINITY): Shape {
  return {
    accepts: Array.isArray,
    fits: fitsOneValue,
    emit: (value, budget, owner) => {
      spendNode(budget);
      const source = value as readonly unknown[];
      const target: unknown[] = [];
      for (let index = 0; index < source.length; index += 1) {
        const item = source[index];
        if (!element.accepts(item)) continue;
        if (target.length >= maxLength) {
          markTruncated(budget, owner);
          break;
        }
        const projected = element.fits(item, 0, budget) ? element.emit(item, budget, owner) : HOLLOW;
        if (projected === HOLLOW) {
          markTruncated(budget, owner);
          return target.length === 0 ? hollow(budget) : target;
        }
        target.push(projected);
      }
      return target;
    },
  };
}

/**
 * Emits one field of `target`; false when the budget ran out there, so the caller stops the object.
 * Redaction keys win over any declared shape.
 */
function emitField(
  target: Record<string, unknown>,
  key: string,
  raw: unknown,
  shape: Shape,
  budget: ProjectionBudget,
): boolean {
  const fieldShape = isRedactionKey(key) ? redacted : shape;
  if (!fieldShape.accepts(raw)) return true;
  if (!fieldShape.fits(raw, key.length, budget)) {
    markTruncated(budget, target);
    return false;
  }
  spendKey(budget, key);
  const projected = fieldShape.emit(raw, budget, target);
  if (projected === HOLLOW) {
    refundKey(budget, key);
    markTruncated(budget, target);
    return false;
  }
  setOwnField(target, key, projected);
  return true;
}

/**
 * Emits the listed fields present in `source`, then (with `extension`) its other fields except
 * `handledKey`, which the caller already wrote; false when the budget stopped the object.
 */
function emitFields(
  target: Record<string, unknown>,
  source: Record<string, unknown>,
  fields: FieldList,
  extension: Shape | null,
  handledKey: string | null,
  budget: ProjectionBudget,
): boolean {
  for (const [key, shape] of fields) {
    if (Object.hasOwn(source, key) && !emitField(target, key, source[key], shape, budget)) return false;
  }
  if (extension === null) return true;
  for (const key of Object.keys(source)) {
    if (key === handledKey || key === TRUNCATION_MARKER || fields.some(([listed]) => listed === key)) continue;
    if (!emitField(target, key, source[key], extension, budget)) return false;
  }
  return true;
}

/** A plain object keeping the listed fields and, with `extension`, any other field of that shape. */
export function record(fields: FieldList, extension: Shape | null = null): Shape {
  return {
    accepts: isPlainObject,
    fits: fitsOneValue,
    emit: (value, budget) => {
      spendNode(budget);
      const target: Record<string, unknown> = {};
      const complete = emitFields(target, value as Record<string, unknown>, fields, extension, null, budget);
      return complete || hasFields(target) ? target : hollow(budget);
    },
  };
}

export interface TaggedOptions {
  /** Fields kept by tags not in the variant table; none by default ("only `type` is retained"). */
  fallback?: FieldList;
  /** Input tags written, and then treated, as another tag. */
  rename?: ReadonlyMap<string, string>;
  /** Tags whose unlisted fields are kept as opaque JSON ("extension fields may be kept"). */
  extensible?: ReadonlySet<string>;
}

/**
 * A tagged object: a plain object with a string `type`. `type` is written first and is never cut:
 * when the object and its whole tag do not fit, the object is not started at all.
 */
export function tagged(variants: ReadonlyMap<string, FieldList>, options: TaggedOptions = {}): Shape {
  const fallback = options.fallback ?? [];
  const outputTag = (value: unknown): string => {
    const tag = (value as { type: string }).type;
    return options.rename?.get(tag) ?? tag;
  };
  return {
    accepts: (value) =>
      isPlainObject(value) && typeof value.type === 'string' && value.type.length <= PROJECTION_STRING_LIMIT,
    fits: (value, keyLength, budget) =>
      budget.nodes >= 2 && keyLength + 'type'.length + outputTag(value).length <= budget.textChars,
    emit: (value, budget) => {
      const source = value as Record<string, unknown>;
      const tag = outputTag(value);
      spendNode(budget);
      const target: Record<string, unknown> = {};
      emitField(target, 'type', tag, text, budget);
      const fields = variants.get(tag) ?? fallback;
      const extension = options.extensible?.has(tag) ? opaque : null;
      emitFields(target, source, fields, extension, 'type', budget);
      return target;
    },
  };
}

function hollow(budget: ProjectionBudget): typeof HOLLOW {
  refundNode(budget);
  return HOLLOW;
}

function hasFields(target: Record<string, unknown>): boolean {
  for (const key in target) if (key !== TRUNCATION_MARKER) return true;
  return false;
}

/** Builds a FieldList from an object literal, keeping its order. */
export function fields(shapes: Record<string, Shape>): FieldList {
  return Object.entries(shapes);
}
