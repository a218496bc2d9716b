/**
 * The contract's TypeBox forms of domain values. The domain modules hold the values themselves as
 * plain constants, so the running server (which reads the contract as JSON) never loads TypeBox.
 */
import { Type, type TLiteral, type TUnion } from 'typebox';
import { EFFORTS } from '../domain/effort.ts';
import { HISTORY_EFFECTS } from '../domain/history-entry.ts';
import { TURN_STATUSES } from '../domain/turn-status.ts';

type Literals<Values> = Values extends readonly [infer First extends string, ...infer Rest] ? [TLiteral<First>, ...Literals<Rest>] : [];

function literalUnion<const Values extends readonly string[]>(values: Values): TUnion<Literals<Values>> {
  return Type.Union(values.map((value) => Type.Literal(value))) as TUnion<Literals<Values>>;
}

export const Effort = literalUnion(EFFORTS);
export const TurnStatus = literalUnion(TURN_STATUSES);
export const HistoryEffect = literalUnion(HISTORY_EFFECTS);
/** The token counters a history entry and a session keep (domain/usage.ts). */
export const UsageCounters = Type.Object({ input: Type.Integer(), output: Type.Integer(), cached: Type.Integer() });
