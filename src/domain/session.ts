/** A session as the runtime and the store hold it (the API maps it in api/dto.ts). */
import type { Effort } from './effort.ts';
import type { UsageCounters } from './usage.ts';

export interface SessionRecord {
  id: string;
  createdAt: string;
  updatedAt: string;
  provider: string;
  connection: string;
  model: string;
  transportModel: string | null;
  dialect: string;
  cwd: string;
  effort: Effort;
  title: string;
  titleIsManual: boolean;
  archived: boolean;
  usage: UsageCounters;
  /** dollars the session's model requests cost (all agents); null while its model has no prices */
  spentCostUsd: number | null;
  /** how full the context was after the session's last model request (CONTRACT.md §19) */
  context: SessionContext;
  /** the limits of `spent` at which a turn stops to ask (CONTRACT.md §19) */
  budget: SessionBudget;
  repository: { url: string; ref: string | null } | null;
  ownsCheckout: boolean;
  planMode: boolean;
  allowances: string[];
}

/** Each limit null when the session has none. */
export interface SessionBudget {
  /** input plus output tokens of every model request of the session */
  tokens: number | null;
  /** dollars, from the models file's prices */
  costUsd: number | null;
}

const NO_BUDGET: SessionBudget = { tokens: null, costUsd: null };

interface SessionContext {
  /** input plus output tokens of the last model request, as the provider reported them; 0 before any */
  usedTokens: number;
  /** the model's context window, null when the models file does not say */
  window: number | null;
}
