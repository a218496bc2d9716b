import { Type, type Static } from 'typebox';

/** Where a turn is in its life (SPEC.md §3): three active states, then one terminal state. */
export const TurnStatus = Type.Union([
  Type.Literal('queued'), Type.Literal('running'), Type.Literal('waiting_for_input'),
  Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled'),
]);
export type TurnStatus = Static<typeof TurnStatus>;

export const ACTIVE_STATUSES: readonly TurnStatus[] = ['queued', 'running', 'waiting_for_input'];
