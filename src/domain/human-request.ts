/** A question a tool puts to a human (CONTRACT.md §7), as the runtime holds it and the API shows it. */

export type HumanRequestKind = 'tool_approval' | 'root_access' | 'plan_enter' | 'plan_exit' | 'plan_question' | 'budget';

export interface HumanDecision {
  decision: string;
  value?: string;
}

/** A human request as the runtime holds it (the API shows it without `agentId`). */
export interface HumanRequestRecord {
  id: string;
  turnId: string;
  sessionId: string;
  /** the agent whose tool call asks; null for the turn's main agent */
  agentId: string | null;
  kind: HumanRequestKind;
  prompt: string;
  options: string[];
  createdAt: string;
}

export type HumanQuestion = Omit<HumanRequestRecord, 'id' | 'createdAt'>;

/** What a client sees of a request: everything but the asking agent. */
export function publishedRequest(request: HumanRequestRecord): Omit<HumanRequestRecord, 'agentId'> {
  const { agentId: _agentId, ...published } = request;
  return published;
}
