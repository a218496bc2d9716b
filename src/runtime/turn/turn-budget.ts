/**
 * Budgets that ask (CONTRACT.md §19). A turn counts what its model requests spend as they end,
 * whichever agent of the turn makes them, on top of what the session had spent before it. Before
 * each model request it compares that with the session's budget: at or past a limit, the turn
 * waits on a human request of kind `budget` (one at a time, shared by agents that run side by
 * side) until it is raised above `spent` or the turn is stopped.
 */
import type { HumanDecision } from '../../domain/human-request.ts';
import type { SessionBudget, SessionRecord } from '../../domain/session.ts';
import type { Completion, ProviderAdapter, ProviderEvent, Usage } from '../../agent/providers/types.ts';
import type { DecisionCheck } from './requests.ts';

export const BUDGET_OPTIONS = ['raise', 'stop'];
export const BUDGET_EXHAUSTED: Completion = { status: 'incomplete', reason: 'budget_exhausted' };

type Limit = keyof SessionBudget;

export interface BudgetAsker {
  /** publishes the budget request and waits for its answer (the turn is waiting meanwhile) */
  ask(prompt: string, check: DecisionCheck): Promise<HumanDecision>;
  /** a raise is the session's new budget: stored and announced before the turn goes on */
  raised(budget: SessionBudget): Promise<void>;
}

export class TurnBudget {
  private tokens: number;
  private costUsd: number | null;
  private limits: SessionBudget;
  private stopped = false;
  private asking: Promise<void> | null = null;

  constructor(
    session: SessionRecord,
    /** the dollars one request's usage cost; null when the model has no prices */
    private readonly costOf: (usage: Usage) => number | null,
    private readonly asker: BudgetAsker,
  ) {
    this.tokens = session.usage.input + session.usage.output;
    this.costUsd = session.spentCostUsd;
    this.limits = session.budget;
  }

  /** A model request of the turn ended with this usage. */
  spend(usage: Usage): void {
    this.tokens += usage.inputTokens + usage.outputTokens;
    const cost = this.costOf(usage);
    if (cost !== null) this.costUsd = (this.costUsd ?? 0) + cost;
  }

  /** For AgentLoopOptions.beforeRequest: null to go on, BUDGET_EXHAUSTED once the turn was stopped. */
  async beforeRequest(): Promise<Completion | null> {
    for (;;) {
      if (this.stopped) return BUDGET_EXHAUSTED;
      const limit = this.reached();
      if (limit === null) return null;
      this.asking ??= this.askAbout(limit).finally(() => (this.asking = null));
      await this.asking;
    }
  }

  /** The limit `spent` has reached (tokens first), or null. */
  private reached(): Limit | null {
    const { tokens, costUsd } = this.limits;
    if (tokens !== null && this.tokens >= tokens) return 'tokens';
    if (costUsd !== null && this.costUsd !== null && this.costUsd >= costUsd) return 'costUsd';
    return null;
  }

  private async askAbout(limit: Limit): Promise<void> {
    const answer = await this.asker.ask(this.prompt(limit), (candidate) => this.refusal(limit, candidate));
    if (answer.decision === 'stop') {
      this.stopped = true;
      return;
    }
    // An answer given on another cluster instance was not checked there: an unfit one asks again.
    if (this.refusal(limit, answer) !== null) return;
    this.limits = { ...this.limits, [limit]: Number(answer.value) };
    await this.asker.raised(this.limits);
  }

  private spent(limit: Limit): number {
    return limit === 'tokens' ? this.tokens : (this.costUsd ?? 0);
  }

  private prompt(limit: Limit): string {
    const what = limit === 'tokens' ? 'tokens' : 'US dollars';
    return (
      `The session has spent ${formatSpent(limit, this.spent(limit))} ${what} of its budget of ${this.limits[limit]}. ` +
      `raise: go on with a new limit, given as the value (${limit === 'tokens' ? 'a whole number' : 'a decimal number'} above what was spent); ` +
      'stop: end the turn here.'
    );
  }

  /** Why an answer cannot be taken, or null. Only a raise carries a value to check. */
  private refusal(limit: Limit, answer: HumanDecision): string | null {
    if (answer.decision !== 'raise') return null;
    const shape = limit === 'tokens' ? /^\d{1,15}$/ : /^\d{1,12}(?:\.\d{1,12})?$/;
    if (answer.value === undefined || !shape.test(answer.value)) {
      return `raise takes the new ${limit} limit as its value: ${limit === 'tokens' ? 'a whole number' : 'a decimal number'}, such as ${limit === 'tokens' ? '200000' : '2.50'}`;
    }
    if (Number(answer.value) <= this.spent(limit)) return `the new ${limit} limit must be above what the session has spent (${formatSpent(limit, this.spent(limit))})`;
    return null;
  }
}

function formatSpent(limit: Limit, spent: number): string {
  return limit === 'tokens' ? String(spent) : String(Math.round(spent * 1e8) / 1e8);
}

/** The adapter with every response's usage told to `spend` as it ends. */
export function meteredAdapter(adapter: ProviderAdapter, spend: (usage: Usage) => void): ProviderAdapter {
  return {
    dialect: adapter.dialect,
    stream: (request, signal) => metered(adapter.stream(request, signal), spend),
  };
}

async function* metered(events: AsyncIterable<ProviderEvent>, spend: (usage: Usage) => void): AsyncGenerator<ProviderEvent> {
  for await (const event of events) {
    if (event.type === 'response.done' && event.usage) spend(event.usage);
    yield event;
  }
}
