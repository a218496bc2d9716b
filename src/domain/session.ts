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
  repository: { url: string; ref: string | null } | null;
  ownsCheckout: boolean;
  planMode: boolean;
  allowances: string[];
}
