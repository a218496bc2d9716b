import { Type, type Static, type TSchema } from 'typebox';
import { HumanRequest, Nullable, Session, Timestamp, TurnCompletion } from './schemas.ts';

/**
 * The event catalogue (SPEC.md §6, CONTRACT.md §6 and §13): every SSE event type with when it is
 * sent and the TypeBox schema of its `data`. The hub accepts only these types with these payloads,
 * /openapi.json describes each one as a branch of EventEnvelope, and the event table of
 * docs/API.md is checked against it. A new event is declared here first.
 *
 * The runtime imports this module's types only, so the built server still starts without TypeBox.
 */

const Nothing = Type.Object({}, { additionalProperties: false });
const DisplayOnly = Type.Literal(true, { description: 'presentation only, never part of the model history' });
const Truncated = Type.Boolean({ description: 'the text was cut at 16,383 characters and ends with …' });
const BoundedText = Type.Object({ text: Type.String(), truncated: Truncated });
const TerminalTurn = Type.Object({ error: Nullable(Type.String()) });
const ItemId = Type.Optional(Type.String({ description: "the provider's id of the output item (OpenAI Responses gives one); absent when the provider gives none" }));
const TextDelta = Type.Object({ text: Type.String(), truncated: Truncated, itemId: ItemId });
const ToolKind = Type.Union([Type.Literal('function'), Type.Literal('custom'), Type.Literal('computer'), Type.Literal('computer_function')]);
const ToolCall = Type.Object({
  callId: Type.String(),
  name: Type.String(),
  kind: ToolKind,
  argumentsEncrypted: Type.Boolean(),
  async: Type.Boolean(),
  argumentsTruncated: Type.Boolean(),
  arguments: Nullable(Type.String({ description: 'null when encrypted or not streamed yet' })),
  itemId: ItemId,
});
const EventUsage = Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer(), cachedTokens: Type.Integer() });
const SetupTarget = Type.Object({ repository: Type.String(), branch: Type.String() });
const StepStatus = Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]);
const AgentStatus = Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')]);
const ResetReason = Type.Union([Type.Literal('clear'), Type.Literal('compact'), Type.Literal('context_window')]);

interface EventDeclaration {
  /** when the event is sent: one sentence, shown in the event table of docs/API.md */
  sent: string;
  data: TSchema;
}

export const EVENT_CATALOGUE = {
  'turn.queued': { sent: 'a turn was accepted and waits for a running slot', data: Nothing },
  'turn.started': { sent: 'the scheduler admitted the turn', data: Nothing },
  'turn.completed': { sent: 'the turn ended and is stored; the turn result holds the output', data: TerminalTurn },
  'turn.failed': { sent: 'the turn failed and is stored', data: TerminalTurn },
  'turn.cancelled': { sent: 'the turn was cancelled and is stored', data: TerminalTurn },
  'turn.resumed': {
    sent: 'another instance of the cluster took the turn over and goes on from its last recorded step',
    data: Type.Object({
      attempt: Type.Integer({ minimum: 2, description: 'the attempt the turn now runs under' }),
      interruptedTools: Type.Array(Type.String(), { description: 'callIds of the calls whose result was not recorded: given to the model as interrupted, not run again' }),
    }),
  },
  'turn.reverted': { sent: 'a revert (POST /v1/turns/:id/revert) wrote the turn\'s files back', data: Type.Object({ paths: Type.Array(Type.String()) }) },
  'turn.steered': { sent: 'input steered into the turn (CreateTurn with steer) waits for its next model request', data: BoundedText },
  'turn.result': {
    sent: "the turn's final answer is valid against its outputSchema; just before the turn is stored",
    data: Type.Object({ result: Type.Unknown({ description: 'the final answer parsed (a JSON object)' }) }),
  },
  'turn.activity': { sent: 'a line of progress for the turn (declared; not sent yet)', data: BoundedText },
  'agent.turn.started': { sent: 'the agent loop of the turn starts', data: Nothing },
  'agent.turn.finished': {
    sent: 'the agent loop finished with an answer, before the turn is stored',
    data: Type.Object({
      responseId: Nullable(Type.String()),
      assistantText: Nullable(Type.String()),
      assistantTextTruncated: Type.Boolean(),
      usage: Nullable(EventUsage),
      completion: TurnCompletion,
    }),
  },
  'response.text.delta': { sent: 'the model streams answer text (plan text too)', data: TextDelta },
  'response.reasoning.delta': { sent: 'the model streams reasoning text', data: TextDelta },
  'warning': { sent: 'something the user should know that does not end the turn', data: BoundedText },
  'provider.limit': {
    sent: 'the provider rate-limited a model request (HTTP 429 or 529), before the retry',
    data: Type.Object({ text: Type.String(), warning: Type.String(), truncated: Truncated }),
  },
  'response.attempt.failed': {
    sent: 'a model request failed and will be retried',
    data: Type.Object({
      displayOnly: DisplayOnly,
      attempt: Type.Integer(),
      status: Nullable(Type.Integer({ description: 'HTTP status, null without one' })),
      reason: Type.Optional(Nullable(Type.String({ description: 'why the attempt failed, e.g. stalled or output_limit; null when the provider did not say' }))),
      retryInMs: Type.Integer(),
    }),
  },
  'response.attempt.discarded': { sent: 'the output streamed by a failed attempt is to be discarded', data: Type.Object({ displayOnly: DisplayOnly, attempt: Type.Integer() }) },
  'response.restarted': { sent: 'the model response starts again after a failed attempt', data: Type.Object({ reason: Type.String(), truncated: Truncated, displayOnly: DisplayOnly }) },
  'model.context.reset': {
    sent: 'the model context was cleared (/clear) or replaced by a summary (/compact, or a full context window)',
    data: Type.Object({
      displayOnly: DisplayOnly,
      reason: ResetReason,
      estimatedTokens: Type.Optional(Type.Integer({ description: 'only for context_window' })),
      contextWindow: Type.Optional(Nullable(Type.Integer({ description: 'only for context_window: the model\'s window' }))),
    }),
  },
  'tool.started': { sent: 'the model began a tool call; its arguments are still streaming', data: ToolCall },
  'tool.arguments.updated': { sent: 'more of a tool call\'s arguments streamed (all of them so far)', data: ToolCall },
  'tool.updated': { sent: 'a tool call\'s arguments are complete, just before policy and execution', data: ToolCall },
  'tool.output.updated': {
    sent: 'a running tool produced output',
    data: Type.Object({ callId: Type.String(), name: Type.String(), output: Type.String(), truncated: Truncated, itemId: ItemId }),
  },
  'tool.finished': {
    sent: 'a tool call ended (run, refused or invalid); its output goes back to the model',
    data: Type.Object({ callId: Type.String(), kind: ToolKind, output: Type.String(), async: Type.Boolean(), truncated: Truncated, imageCount: Type.Integer(), itemId: ItemId }),
  },
  'tool.retracted': { sent: 'a tool call started by a failed model attempt is withdrawn', data: Type.Object({ callId: Type.String(), displayOnly: DisplayOnly }) },
  'agent.started': {
    sent: 'a child agent started (spawn_agent); its tool calls send the turn\'s tool events',
    data: Type.Object({ agentId: Type.String(), parentId: Nullable(Type.String()), label: Type.String(), model: Nullable(Type.String()) }),
  },
  'agent.output': { sent: 'a child agent streams its answer text', data: Type.Object({ agentId: Type.String(), output: Type.String(), truncated: Truncated }) },
  'agent.finished': { sent: 'a child agent ended (completed, failed or cancelled)', data: Type.Object({ agentId: Type.String(), status: AgentStatus }) },
  'request.created': { sent: 'a human request waits for an answer; data is the HumanRequest itself', data: HumanRequest },
  'request.resolved': { sent: 'a human request was answered, cancelled or expired; drop it from the pending list', data: Type.Object({ requestId: Type.String() }) },
  'session.created': { sent: 'a session was created (a fork too); sessionId is the new session', data: Type.Object({ session: Session }) },
  'session.updated': { sent: 'a session was renamed (by PATCH or its first turn), archived or unarchived', data: Type.Object({ session: Session }) },
  'session.deleted': { sent: 'a session and its history were deleted', data: Nothing },
  'session.setup.started': { sent: 'the session\'s repository checkout began', data: SetupTarget },
  'session.setup.step': {
    sent: 'a checkout command started (running) or ended',
    data: Type.Object({ operationId: Type.String(), command: Type.String(), status: StepStatus }),
  },
  'session.setup.completed': { sent: 'the repository is checked out; the branch is the one checked out', data: SetupTarget },
  'session.setup.failed': { sent: 'the checkout failed; the session cannot run turns until set up again', data: Type.Object({ message: Type.String() }) },
} as const satisfies Record<string, EventDeclaration>;

type EventCatalogue = typeof EVENT_CATALOGUE;
export type EventType = keyof EventCatalogue;
export type EventData<Type extends EventType> = Static<EventCatalogue[Type]['data']>;
/** The types whose data is exactly a bounded text and its truncation flag. */
export type TextEventType = { [Name in EventType]: EventData<Name> extends Static<typeof BoundedText> ? (Static<typeof BoundedText> extends EventData<Name> ? Name : never) : never }[EventType];

export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

/** One ordinary event as a client receives it: the envelope with the data of its type. */
export type AgentdEvent = {
  [Name in EventType]: { id: number; type: Name; turnId: string | null; sessionId: string | null; at: string; data: EventData<Name> };
}[EventType];

/** The control event: no envelope, no id (SPEC.md §6). */
export const ReplayReset = Type.Object(
  { reason: Type.Literal('event_gap'), refetch: Type.Literal(true) },
  { description: 'the data of the replay.reset control frame: discard incremental state and refetch' },
);

/** The EventEnvelope named schema: one branch per event type, its data described inline. */
export const EventEnvelope = Type.Union(
  EVENT_TYPES.map((name) =>
    Type.Object(
      {
        id: Type.Integer(),
        type: Type.Literal(name),
        turnId: Nullable(Type.String()),
        sessionId: Nullable(Type.String()),
        at: Timestamp,
        data: EVENT_CATALOGUE[name].data,
      },
      { description: EVENT_CATALOGUE[name].sent },
    ),
  ),
  {
    title: 'EventEnvelope',
    description: 'the JSON data of every SSE frame except replay.reset, one branch per type; clients ignore types they do not know',
  },
);

/** What one SSE frame's data can be: an event envelope or the replay.reset control data. */
export const EventFrameData = Type.Union([EventEnvelope, ReplayReset]);
