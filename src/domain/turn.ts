/** A turn as the runtime and the store hold it (the API maps it in api/dto.ts). */
import type { FileChange } from './file-changes.ts';
import type { TurnStatus } from './turn-status.ts';

export interface TurnOutputRecord {
  responseId: string | null;
  assistantText: string | null;
  assistantTextTruncated: boolean;
  completion: { status: 'completed' | 'incomplete'; reason?: string; reasoningTokens: number | null };
  /** the turn's change receipt (CONTRACT.md §20); absent on outputs stored before receipts */
  changes?: FileChange[];
  changesTruncated?: boolean;
  /** the final answer parsed and valid against the turn's outputSchema (CONTRACT.md §22); only with one */
  result?: unknown;
}

export interface TurnRecord {
  id: string;
  boundaryId: string;
  sessionId: string;
  clientRequestId: string;
  inputDigest: string;
  status: TurnStatus;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  /** the submitted text, bounded like event text (the durable row keeps all of it) */
  input: string;
  /** the user message as written into history, bounded alike */
  userText: string;
  /** whether `input` or `userText` was cut to the bound */
  inputTruncated: boolean;
  output: TurnOutputRecord | null;
  /** 1 for the first owner, +1 per takeover: the fencing number each write of the turn is conditional on */
  attempt: number;
}

/** The whole text of a turn, as submitted: only the row and the running turn hold it. */
export interface TurnText {
  input: string;
  userText: string;
  /** the outputSchema's JSON text (CONTRACT.md §22), stored with the turn so that any instance can run it */
  outputSchema?: string | null;
}
