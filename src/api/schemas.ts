import { Type, type Static, type TSchema } from 'typebox';
import { Effort, HistoryEffect, TurnStatus, UsageCounters } from './domain-schemas.ts';

/**
 * The contract in one place: these schemas validate requests, type the handlers and become the
 * 17 named schemas of /openapi.json. Each named schema carries its name as `title`, which the
 * OpenAPI builder turns into a `$ref`.
 */

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time', description: 'UTC, ISO-8601 with milliseconds' });
const UuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const Uuid = Type.String({ pattern: UuidPattern });

export const Model = Type.Object(
  {
    id: Type.String(),
    provider: Type.String(),
    connection: Type.String(),
    transportModel: Type.String(),
    dialect: Type.String(),
    label: Nullable(Type.String()),
    contextWindow: Nullable(Type.Integer()),
    efforts: Type.Array(Type.String(), { description: 'efforts this model accepts' }),
    defaultEffort: Type.String(),
  },
  { title: 'Model' },
);

const BudgetTokens = Nullable(Type.Integer({ minimum: 0, description: 'the limit of spent.tokens; null: none' }));
const BudgetCostUsd = Nullable(Type.Number({ minimum: 0, description: 'the limit of spent.costUsd; null: none' }));
/** A session's budget as a client sets it: a limit left out is none (null). */
const BudgetInput = Type.Object(
  { tokens: Type.Optional(BudgetTokens), costUsd: Type.Optional(BudgetCostUsd) },
  { additionalProperties: false, description: 'checked between model requests: a turn that reaches a limit waits on a budget request (raise or stop)' },
);

export const Session = Type.Object(
  {
    id: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    provider: Type.String(),
    connection: Type.String(),
    model: Type.String(),
    dialect: Type.String(),
    cwd: Type.String(),
    effort: Type.String(),
    title: Type.String(),
    titleIsManual: Type.Boolean(),
    archived: Type.Boolean(),
    transportModel: Nullable(Type.String()),
    usage: UsageCounters,
    spent: Type.Object(
      { tokens: Type.Integer(), costUsd: Nullable(Type.Number()) },
      { description: "input + output tokens of every model request of the session, all agents; costUsd from the models file's prices, null when unpriced" },
    ),
    context: Type.Object(
      { usedTokens: Type.Integer(), window: Nullable(Type.Integer()) },
      { description: "input + output tokens of the session's last model request, as reported; window null when unknown" },
    ),
    budget: Type.Object({ tokens: BudgetTokens, costUsd: BudgetCostUsd }, { description: 'the limits of spent at which a turn waits on a budget request' }),
    repository: Nullable(Type.Object({ url: Type.String(), ref: Nullable(Type.String()) })),
    planMode: Type.Boolean({ description: 'plan mode: read-only tools until a plan is approved (set by the model with a plan_enter request, or by PATCH)' }),
  },
  { title: 'Session' },
);

export const SessionPage = Type.Object(
  { data: Type.Array(Session), nextCursor: Nullable(Type.String()) },
  { title: 'SessionPage' },
);

export const CreateSession = Type.Object(
  {
    cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    title: Type.Optional(Type.String({ maxLength: 512 })),
    effort: Type.Optional(Effort),
    budget: Type.Optional(BudgetInput),
    repository: Type.Optional(
      Type.Object(
        { url: Type.String({ minLength: 1, maxLength: 4096 }), ref: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })) },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'CreateSession', additionalProperties: false },
);

export const PatchSession = Type.Object(
  {
    title: Type.Optional(Type.String({ maxLength: 512 })),
    archived: Type.Optional(Type.Boolean()),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'a catalog id; the session\'s effort must suit it' })),
    effort: Type.Optional(Effort),
    budget: Type.Optional(BudgetInput),
    planMode: Type.Optional(Type.Boolean({ description: 'enter (true) or leave (false) plan mode, as ACP session/set_mode does (an extension)' })),
  },
  { title: 'PatchSession', additionalProperties: false, description: 'exactly one of title, archived, model, effort, budget or planMode' },
);

export const ForkSession = Type.Object(
  {
    throughTurn: Type.Optional(Type.Integer({ minimum: 0 })),
    title: Type.Optional(Type.String({ maxLength: 512 })),
    cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { title: 'ForkSession', additionalProperties: false },
);

const ImageAttachment = Type.Object(
  {
    mimeType: Type.Union(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/bmp'].map((value) => Type.Literal(value))),
    data: Type.String({ description: 'base64' }),
  },
  { additionalProperties: false },
);
const FileAttachment = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 255 }), mimeType: Type.String({ minLength: 1, maxLength: 255 }), data: Type.String({ description: 'base64' }) },
  { additionalProperties: false },
);

export const CreateTurn = Type.Object(
  {
    input: Type.String(),
    clientRequestId: Type.Optional(Uuid),
    images: Type.Optional(Type.Array(ImageAttachment)),
    files: Type.Optional(Type.Array(FileAttachment, { description: 'not with steer' })),
    steer: Type.Optional(
      Type.Boolean({
        description: "join the session's active turn (queued, running or waiting): the model gets the input before the turn's next request; with no active turn, an ordinary queued turn",
      }),
    ),
    outputSchema: Type.Optional(
      Type.Object({}, {
        additionalProperties: true,
        description: 'a JSON Schema (at most 64 KiB of JSON, its root "type": "object") the final answer must satisfy: the turn output and history carry the parsed `result`, the event turn.result announces it; an answer still not valid after two re-asks fails the turn with output_invalid. Not with steer',
      }),
    ),
    shell: Type.Optional(
      Type.Boolean({
        'x-agentd-extension': true,
        description:
          "`!command` (CONTRACT.md §24): input is a shell command (at most 16,382 characters) the turn runs as the `shell` tool in the session cwd, through the approval policy of the model's calls, without asking the model; the call and its output join the history, userText is `!` and the command. Not with steer, images, files or outputSchema",
      }),
    ),
  },
  { title: 'CreateTurn', additionalProperties: false },
);

export const Turn = Type.Object(
  {
    id: Type.String(),
    clientRequestId: Type.String(),
    sessionId: Type.String(),
    status: TurnStatus,
    createdAt: Timestamp,
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
    error: Nullable(Type.String()),
    input: Type.String({ description: 'the submitted text, bounded like event text (16,383 characters, then …)' }),
    userText: Type.String({ description: 'the user message as written into history, bounded alike' }),
    inputTruncated: Type.Boolean({ description: 'true when input or userText was cut; the durable record keeps the whole text' }),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first owner, +1 each time another instance of a cluster took the turn over (docs/CLUSTER.md)' }),
    delivery: Type.Optional(
      Type.Union([Type.Literal('queued'), Type.Literal('steered')], {
        description: 'only on CreateTurn answers: queued (a turn of its own) or steered (the input joined this active turn)',
      }),
    ),
  },
  { title: 'Turn' },
);

export const TurnCompletion = Type.Object(
  {
    status: Type.Union([Type.Literal('completed'), Type.Literal('incomplete')]),
    reason: Type.Optional(Type.String()),
    reasoningTokens: Nullable(Type.Integer()),
  },
  { title: 'TurnCompletion' },
);

/** A turn's change receipt (CONTRACT.md §20): fields of TurnOutput and of each history turn. */
const FileChange = Type.Object({
  path: Type.String({ description: 'relative to the session cwd' }),
  kind: Type.Union([Type.Literal('created'), Type.Literal('modified'), Type.Literal('deleted')]),
  bytes: Type.Integer({ minimum: 0, description: 'the size after the turn; 0 for a deleted file' }),
});
const Changes = Type.Array(FileChange, {
  maxItems: 1000,
  description: 'the files the turn\'s tools (shell included, child agents included) created, modified or deleted under the session cwd, by path (docs/API.md, "Change receipts")',
});
const ChangesTruncated = Type.Boolean({ description: 'more files changed than listed (over 1,000, or a cwd too large to watch whole)' });

/** CONTRACT.md §22: the final answer parsed, valid against the turn's outputSchema. */
const StructuredResult = Type.Unknown({ description: "the final answer parsed, valid against the turn's outputSchema; present only on turns that had one" });

export const TurnOutput = Type.Object(
  {
    responseId: Nullable(Type.String()),
    assistantText: Nullable(Type.String()),
    assistantTextTruncated: Type.Boolean(),
    completion: TurnCompletion,
    changes: Type.Optional(Changes),
    changesTruncated: Type.Optional(ChangesTruncated),
    result: Type.Optional(StructuredResult),
  },
  { title: 'TurnOutput' },
);

export const TurnResult = Type.Object({ turn: Turn, output: Nullable(TurnOutput) }, { title: 'TurnResult' });

export const Agent = Type.Object(
  {
    path: Type.Optional(Type.String()),
    status: Type.Optional(Type.String()),
    model: Type.Optional(Nullable(Type.String())),
    steps: Type.Optional(
      Type.Array(
        Type.Object({
          state: Type.Optional(Type.String({ description: 'running, completed, failed or info' })),
          title: Type.Optional(Type.String()),
          detail: Type.Optional(Nullable(Type.String())),
        }),
      ),
    ),
    projectionTruncated: Type.Optional(Type.Boolean()),
  },
  { title: 'Agent', description: 'a projection: fields and array entries may be missing when the budget ran out' },
);

export const HumanRequest = Type.Object(
  {
    id: Type.String(),
    turnId: Type.String(),
    sessionId: Type.String(),
    kind: Type.String({ description: 'tool_approval, root_access, plan_enter, plan_exit, plan_question or budget' }),
    prompt: Type.String(),
    options: Type.Array(Type.String()),
    createdAt: Timestamp,
  },
  { title: 'HumanRequest' },
);

export const ResolveRequest = Type.Object(
  { decision: Type.String({ minLength: 1, maxLength: 1024 }), value: Type.Optional(Type.String({ maxLength: 65536, description: 'the words with request_changes and custom; the reason the model is given with deny; the new limit with raise (a budget request)' })) },
  { title: 'ResolveRequest', additionalProperties: false },
);

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      requestId: Type.String(),
      details: Type.Optional(Type.Unknown()),
    }),
  },
  { title: 'ErrorEnvelope' },
);

const HistoryTurn = Type.Object({
  at: Timestamp,
  userText: Type.String(),
  assistantText: Nullable(Type.String()),
  error: Nullable(Type.String()),
  responseId: Nullable(Type.String()),
  effect: HistoryEffect,
  items: Type.Array(Type.Unknown()),
  displayItems: Type.Array(Type.Unknown()),
  usage: Nullable(UsageCounters),
  providerTelemetry: Type.Array(Type.Unknown(), {
    description: 'one entry per agent that made model requests, the main agent first; [] when none completed and on provisional entries',
  }),
  changes: Type.Optional(Changes),
  changesTruncated: Type.Optional(ChangesTruncated),
  result: Type.Optional(StructuredResult),
  status: Type.Optional(Type.String({ description: 'only on provisional entries for active turns' })),
  projectionTruncated: Type.Optional(Type.Boolean()),
});

export const HistoryPage = Type.Object(
  {
    session: Session,
    data: Type.Array(Type.Object({ index: Type.Integer(), turn: HistoryTurn })),
    generationStart: Type.Integer(),
    total: Type.Integer(),
    hasOlder: Type.Boolean(),
    hasNewer: Type.Boolean(),
    nextCursor: Nullable(Type.Integer()),
  },
  { title: 'HistoryPage' },
);

export type SessionDto = Static<typeof Session>;
export type CreateSessionBody = Static<typeof CreateSession>;
export type PatchSessionBody = Static<typeof PatchSession>;
export type ForkSessionBody = Static<typeof ForkSession>;
export type CreateTurnBody = Static<typeof CreateTurn>;
export type TurnDto = Static<typeof Turn>;
export type ResolveRequestBody = Static<typeof ResolveRequest>;
export type HumanRequestDto = Static<typeof HumanRequest>;
