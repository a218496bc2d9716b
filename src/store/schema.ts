/** Table shapes as the query layer sees them. JSON columns hold text; booleans are 0/1 integers. */
import type { Generated } from 'kysely';

export interface SessionsTable {
  id: string;
  boundary_id: string;
  created_at: string;
  updated_at: string;
  provider: string;
  connection: string;
  model: string;
  transport_model: string | null;
  dialect: string;
  cwd: string;
  effort: string;
  title: string;
  title_is_manual: number;
  archived: number;
  usage_input: number;
  usage_output: number;
  usage_cached: number;
  /** null while the session's model has no prices */
  spent_cost_usd: number | null;
  context_used_tokens: number;
  context_window: number | null;
  /** the session's budget (CONTRACT.md §19): null where it has no such limit */
  budget_tokens: number | null;
  budget_cost_usd: number | null;
  repository_url: string | null;
  repository_ref: string | null;
  owns_checkout: number;
  plan_mode: number;
  /** JSON array of approval keys granted with allow_session */
  allowances: string;
}

export interface TurnsTable {
  id: string;
  boundary_id: string;
  session_id: string;
  client_request_id: string;
  input_digest: string;
  status: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  input: string;
  user_text: string;
  /** JSON TurnOutput, null until the turn ends */
  output: string | null;
  /** 1 for the first owner, +1 per takeover: the fencing number every write of the turn names */
  attempt: number;
  /** --cluster: the instance holding the turn's lease, and when the lease ends (the database's clock, epoch ms) */
  lease_owner: string | null;
  lease_expires_at: number | null;
  /** --cluster: when an instance that does not run the turn was asked to cancel it; its owner polls for it */
  cancel_requested_at: string | null;
  /** --cluster: times the turn was taken over after its lease ran out unrenewed (not after a handover); --max-turn-takeovers bounds it */
  takeovers: Generated<number>;
  /** --cluster: 1 when any instance may start the turn while it is queued (no attachments kept only in memory) */
  movable: Generated<number>;
  /** the outputSchema's JSON text (CONTRACT.md §22), null without one */
  output_schema: string | null;
}

/** --cluster: the human requests of the turns of a cluster, so every instance lists and answers them. */
/** A durable step of a cluster's active turn (store/turn-steps.ts). */
interface TurnStepsTable {
  turn_id: string;
  seq: number;
  /** the attempt that wrote it */
  attempt: number;
  /** JSON array of the canonical items the step added */
  items: string;
  /** JSON of a model response's figures (domain/turn-step.ts RecordedModelStep); null for tool results */
  model_step: string | null;
  /** a step of tool results: the turn's change receipt as it then stood (runtime/turn/turn-receipt.ts snapshot); else null */
  receipt: string | null;
}

/** --cluster: a steer taken by one instance for a turn another may run (store/turn-steers.ts). */
interface TurnSteersTable {
  id: string;
  session_id: string;
  turn_id: string;
  client_request_id: string | null;
  input_digest: string;
  /** the steered text (text-codec.ts), '' once decided */
  input: string;
  /** JSON of the user message the turn is given, '' once decided */
  item: string;
  created_at: string;
  /** pending, claimed (by the turn's owner at claimed_attempt), steered or refused */
  status: string;
  claimed_attempt: number | null;
}

export interface HumanRequestsTable {
  id: string;
  boundary_id: string;
  turn_id: string;
  session_id: string;
  agent_id: string | null;
  kind: string;
  prompt: string;
  /** JSON array of the advertised options */
  options: string;
  created_at: string;
  /** pending; resolved (decision and value set, by any instance); withdrawn (the turn was cancelled) */
  status: string;
  decision: string | null;
  value: string | null;
}

export interface HistoryTurnsTable {
  session_id: string;
  idx: number;
  turn_id: string | null;
  at: string;
  user_text: string;
  assistant_text: string | null;
  error: string | null;
  response_id: string | null;
  effect: string;
  items: string;
  display_items: string;
  usage: string | null;
  provider_telemetry: string | null;
  /** JSON FileChanges, null when the entry has no receipt */
  changes: string | null;
  /** JSON of the structured result (CONTRACT.md §22), null when the turn had no outputSchema */
  result: string | null;
}

interface BoundariesTable {
  id: string;
  /** Event ids below this value may have been handed out: a restart continues from here. */
  event_id_ceiling: number;
}

/** The shared event window of a cluster (store/cluster-events.ts): the newest events of each boundary. */
interface EventsTable {
  boundary_id: string;
  id: number;
  type: string;
  session_id: string | null;
  turn_id: string | null;
  at: string;
  /** the event's data, as JSON */
  data: string;
}

/** A webhook delivery still owed (migration 0008, runtime/webhooks/): deleted once delivered or dropped. */
export interface WebhookOutboxTable {
  id: string;
  /** the payload's `id`, the same for every URL and every retry of one event */
  event_id: string;
  url: string;
  event_type: string;
  /** the exact JSON body signed and sent */
  body: string;
  /** epoch ms: when the event was announced (the 24 h of retries count from here) */
  created_at: number;
  /** epoch ms: when the next attempt is due; a claimed row's is pushed past the attempt's end */
  next_attempt_at: number;
  attempts: number;
}

/** A cluster's agents view of a turn (store/turn-agents.ts): JSON of the child agents' records. */
interface TurnAgentsTable {
  turn_id: string;
  view: string;
}

interface TurnRevertsTable {
  turn_id: string;
  boundary_id: string;
  session_id: string;
  created_at: string;
  /** available | unavailable | reverted */
  status: string;
  reason: string | null;
  /** JSON RevertEntry[] */
  entries: string;
}

interface RevertContentsTable {
  hash: string;
  /** the content's length in bytes (bigint: a string from PostgreSQL) */
  size: number | string;
  /** the bytes themselves (migration 0014) */
  content: Uint8Array;
}

interface TurnRevertContentsTable {
  turn_id: string;
  hash: string;
}

export interface Database {
  turn_reverts: TurnRevertsTable;
  revert_contents: RevertContentsTable;
  turn_revert_contents: TurnRevertContentsTable;
  sessions: SessionsTable;
  turns: TurnsTable;
  history_turns: HistoryTurnsTable;
  boundaries: BoundariesTable;
  human_requests: HumanRequestsTable;
  events: EventsTable;
  turn_steps: TurnStepsTable;
  turn_steers: TurnSteersTable;
  webhook_outbox: WebhookOutboxTable;
  turn_agents: TurnAgentsTable;
}
