/** Where a turn is in its life (SPEC.md §3): three active states, then one terminal state. */
export const TURN_STATUSES = ['queued', 'running', 'waiting_for_input', 'completed', 'failed', 'cancelled'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

export const ACTIVE_STATUSES: readonly TurnStatus[] = ['queued', 'running', 'waiting_for_input'];
