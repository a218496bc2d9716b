/**
 * Records of the runtime → the wire shapes of api/schemas.ts. The one place that decides what a
 * client sees of a session, a turn, a human request and a history page; the runtime never builds
 * a response body.
 */
import { createProjectionBudget, projectHistoryItems, projectJson, projectText } from '../domain/projection.ts';
import type { HistoryEntry } from '../domain/history-entry.ts';
import type { SessionRecord } from '../domain/session.ts';
import type { TurnRecord } from '../domain/turn.ts';
import type { HistoryPage, HistoryPageEntry } from '../domain/history-page.ts';
import { publishedRequest, type HumanRequestRecord } from '../domain/human-request.ts';
import type { HumanRequestDto, SessionDto, TurnDto } from './schemas.ts';

export function toSessionDto(session: SessionRecord): SessionDto {
  return {
    id: session.id,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    provider: session.provider,
    connection: session.connection,
    model: session.model,
    dialect: session.dialect,
    cwd: session.cwd,
    effort: session.effort,
    title: session.title,
    titleIsManual: session.titleIsManual,
    archived: session.archived,
    transportModel: session.transportModel,
    usage: session.usage,
    spent: { tokens: session.usage.input + session.usage.output, costUsd: session.spentCostUsd },
    context: session.context,
    budget: session.budget,
    repository: session.repository,
    planMode: session.planMode,
  };
}

export function toTurnDto(record: TurnRecord): TurnDto {
  return {
    id: record.id,
    clientRequestId: record.clientRequestId,
    sessionId: record.sessionId,
    status: record.status,
    createdAt: record.createdAt,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt,
    error: record.error,
    input: record.input,
    userText: record.userText,
    inputTruncated: record.inputTruncated,
    attempt: record.attempt,
  };
}

/** A human request as clients see it (the same body `request.created` carries). */
export function toHumanRequestDto(request: HumanRequestRecord): HumanRequestDto {
  return publishedRequest(request);
}

export function toHistoryPageDto(page: HistoryPage) {
  return {
    session: toSessionDto(page.session),
    data: page.entries.map((entry) => ({ index: entry.index, turn: projectEntry(entry) })),
    generationStart: page.generationStart,
    total: page.total,
    hasOlder: page.hasOlder,
    hasNewer: page.hasNewer,
    nextCursor: page.nextCursor,
  };
}

function projectEntry(entry: HistoryPageEntry): Record<string, unknown> {
  return 'stored' in entry ? projectHistoryTurn(entry.stored) : projectProvisionalTurn(entry.provisional);
}

/** One stored turn under one projection budget (text fields first, then items, then telemetry). */
function projectHistoryTurn(turn: HistoryEntry): Record<string, unknown> {
  const budget = createProjectionBudget();
  const projected: Record<string, unknown> = {
    at: turn.at,
    userText: projectText(turn.userText, budget),
    assistantText: turn.assistantText === null ? null : projectText(turn.assistantText, budget),
    error: turn.error === null ? null : projectText(turn.error, budget),
    responseId: turn.responseId === null ? null : projectText(turn.responseId, budget),
    effect: turn.effect,
    // before the items: the structured result is what a script reads, so it goes first when the budget is short
    ...('result' in turn ? { result: projectJson(turn.result, budget) } : {}),
    items: projectHistoryItems(turn.items, budget),
    displayItems: projectHistoryItems(turn.displayItems, budget),
    usage: turn.usage,
    providerTelemetry: projectJson(turn.providerTelemetry, budget) ?? [],
    changes: turn.changes?.changes ?? [],
    changesTruncated: turn.changes?.changesTruncated ?? false,
  };
  if (budget.truncated) projected.projectionTruncated = true;
  return projected;
}

/** The provisional entry of an active turn: its user text and status, nothing the model said. */
function projectProvisionalTurn(turn: TurnRecord): Record<string, unknown> {
  const budget = createProjectionBudget();
  const projected: Record<string, unknown> = {
    at: turn.createdAt,
    userText: projectText(turn.userText, budget),
    assistantText: null,
    error: null,
    responseId: null,
    effect: 'append',
    items: [],
    displayItems: [],
    usage: null,
    providerTelemetry: [],
    changes: [],
    changesTruncated: false,
    status: turn.status,
  };
  if (budget.truncated) projected.projectionTruncated = true;
  return projected;
}
