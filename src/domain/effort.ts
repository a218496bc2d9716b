import { Type, type Static } from 'typebox';

/** How much a model may reason before it answers, from none to the most a provider offers. */
export const Effort = Type.Union([
  Type.Literal('none'), Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('xhigh'), Type.Literal('max'),
]);
export type Effort = Static<typeof Effort>;

export const EFFORTS: readonly Effort[] = Effort.anyOf.map((literal) => literal.const);
