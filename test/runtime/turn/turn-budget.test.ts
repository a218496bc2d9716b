// The budget raise's value (CONTRACT.md §19; issue 39 item 8): only a whole number of tokens or a
// plain decimal of dollars is taken. A value the pattern took by its prefix ("0.5x", "1e9",
// "2.50 dollars") would become NaN or another number and the budget silently no limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUDGET_EXHAUSTED, BUDGET_OPTIONS, meteredAdapter, TurnBudget } from '../../../src/runtime/turn/turn-budget.ts';
import type { ProviderAdapter, Usage } from '../../../src/agent/providers/types.ts';
import type { HumanDecision } from '../../../src/domain/human-request.ts';
import type { SessionRecord } from '../../../src/domain/session.ts';
import type { DecisionCheck } from '../../../src/runtime/turn/requests.ts';

/** A session at its limit of `limit`; the budget's check on each candidate raise, then a stop. */
async function checksOf(limit: 'tokens' | 'costUsd', candidates: string[]): Promise<Map<string, string | null>> {
  const session = { usage: { input: 600, output: 400, cached: 0 }, spentCostUsd: 1, budget: { tokens: limit === 'tokens' ? 1000 : null, costUsd: limit === 'costUsd' ? 1 : null } } as unknown as SessionRecord;
  const verdicts = new Map<string, string | null>();
  const budget = new TurnBudget(session, () => 0, {
    async ask(_prompt: string, check: DecisionCheck): Promise<HumanDecision> {
      for (const value of candidates) verdicts.set(value, check({ decision: 'raise', value }));
      return { decision: 'stop' };
    },
    async raised() {},
  });
  await budget.beforeRequest();
  return verdicts;
}

test('a dollar raise is a plain decimal, whole: trailing words, exponents, signs and spaces are refused', async () => {
  const refused = ['0.5x', '1e9', '2.50 dollars', '2.50 ', ' 2.50', 'x2.50', '$2.50', '-3', '+3', '0x10', '2.', '.5', 'Infinity', '2.50\n3', ''];
  const taken = ['2.50', '3', '1.000000001', '999999999999.999999999999'];
  const verdicts = await checksOf('costUsd', [...refused, ...taken]);
  for (const value of refused) assert.match(verdicts.get(value) ?? 'taken', /a decimal number, such as 2\.50/, JSON.stringify(value));
  for (const value of taken) assert.equal(verdicts.get(value), null, value);
  assert.match((await checksOf('costUsd', ['1', '0.99'])).get('0.99') ?? '', /must be above what the session has spent \(1\)/);
});

test('a token raise is a whole number: "1e9", "200000x", "2000.5" and "2000 tokens" are refused', async () => {
  const verdicts = await checksOf('tokens', ['1e9', '200000x', '2000.5', '2000 tokens', 'x2000', '2000', '1000']);
  for (const value of ['1e9', '200000x', '2000.5', '2000 tokens', 'x2000']) assert.match(verdicts.get(value) ?? 'taken', /a whole number, such as 200000/, value);
  assert.equal(verdicts.get('2000'), null);
  assert.match(verdicts.get('1000') ?? '', /must be above what the session has spent \(1000\)/);
});

const usage = (inputTokens: number, outputTokens: number): Usage => ({ inputTokens, outputTokens, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null });

/** A budget over a session that spent nothing yet; the asker answers from `answers` in turn and records each prompt and raise. */
function budgetOf(limits: { tokens: number | null; costUsd: number | null }, costOf: (u: Usage) => number | null, answers: HumanDecision[]) {
  const session = { usage: { input: 0, output: 0, cached: 0 }, spentCostUsd: costOf(usage(0, 0)) === null ? null : 0, budget: limits } as unknown as SessionRecord;
  const prompts: string[] = [];
  const raises: unknown[] = [];
  const budget = new TurnBudget(session, costOf, {
    async ask(prompt) {
      prompts.push(prompt);
      return answers.shift() ?? { decision: 'stop' };
    },
    async raised(limits) {
      raises.push(limits);
    },
  });
  return { budget, prompts, raises };
}

test('tokens spent reach the limit: the turn asks, a raise goes on with the new limit, a stop ends it for good', async () => {
  const { budget, prompts, raises } = budgetOf({ tokens: 1000, costUsd: null }, () => null, [{ decision: 'raise', value: '2500' }, { decision: 'stop' }]);
  assert.deepEqual(BUDGET_OPTIONS, ['raise', 'stop']);
  assert.equal(await budget.beforeRequest(), null);
  budget.spend(usage(600, 399));
  assert.equal(await budget.beforeRequest(), null, 'one token short of the limit');
  budget.spend(usage(0, 1));
  assert.equal(await budget.beforeRequest(), null, 'raised to 2500');
  assert.deepEqual(prompts, ['The session has spent 1000 tokens of its budget of 1000. raise: go on with a new limit, given as the value (a whole number above what was spent); stop: end the turn here.']);
  assert.deepEqual(raises, [{ tokens: 2500, costUsd: null }]);
  budget.spend(usage(1000, 500));
  assert.deepEqual(await budget.beforeRequest(), BUDGET_EXHAUSTED);
  assert.deepEqual(BUDGET_EXHAUSTED, { status: 'incomplete', reason: 'budget_exhausted' });
  assert.equal(prompts.length, 2);
  assert.deepEqual(await budget.beforeRequest(), BUDGET_EXHAUSTED, 'stopped: no new question');
  assert.equal(prompts.length, 2);
});

test('dollars spent reach the limit only with prices; an unfit answer given elsewhere asks again', async () => {
  const priced = budgetOf({ tokens: null, costUsd: 1 }, (u) => u.inputTokens / 1000, [{ decision: 'raise', value: '0.5x' }, { decision: 'raise', value: '3' }]);
  priced.budget.spend(usage(600, 0));
  assert.equal(await priced.budget.beforeRequest(), null);
  priced.budget.spend(usage(400, 0));
  assert.equal(await priced.budget.beforeRequest(), null);
  assert.equal(priced.prompts.length, 2, 'the unfit raise was asked again');
  assert.equal(priced.prompts[0], 'The session has spent 1 US dollars of its budget of 1. raise: go on with a new limit, given as the value (a decimal number above what was spent); stop: end the turn here.');
  assert.deepEqual(priced.raises, [{ tokens: null, costUsd: 3 }]);
  const unpriced = budgetOf({ tokens: null, costUsd: 1 }, () => null, []);
  unpriced.budget.spend(usage(1_000_000, 1_000_000));
  assert.equal(await unpriced.budget.beforeRequest(), null, 'no prices: the dollar limit is never reached');
  assert.equal(unpriced.prompts.length, 0);
});

test('the metered adapter tells each finished response\'s usage and passes every event on unchanged', async () => {
  const events = [{ type: 'text.delta', text: 'a' }, { type: 'response.done', usage: usage(3, 4) }, { type: 'response.done' }];
  const adapter = { dialect: 'openai-responses', stream: async function* () { yield* events; } } as unknown as ProviderAdapter;
  const spent: unknown[] = [];
  const metered = meteredAdapter(adapter, (u) => spent.push(u));
  assert.equal(metered.dialect, 'openai-responses');
  const seen: unknown[] = [];
  for await (const event of metered.stream({} as never, new AbortController().signal)) seen.push(event);
  assert.deepEqual(seen, events);
  assert.deepEqual(spent, [usage(3, 4)]);
});

test('a stop needs no value, and dollars spent are shown rounded, not in floating-point noise', async () => {
  let stopVerdict: string | null | undefined;
  const session = { usage: { input: 0, output: 0, cached: 0 }, spentCostUsd: 0, budget: { tokens: null, costUsd: 0.3 } } as unknown as SessionRecord;
  const prompts: string[] = [];
  const costs = [0.1, 0.2];
  const budget = new TurnBudget(session, () => costs.shift() ?? 0, {
    async ask(prompt, check) {
      prompts.push(prompt);
      stopVerdict = check({ decision: 'stop' });
      return { decision: 'stop' };
    },
    async raised() {},
  });
  budget.spend(usage(1, 1));
  budget.spend(usage(1, 1)); // 0.1 + 0.2 = 0.30000000000000004
  assert.deepEqual(await budget.beforeRequest(), BUDGET_EXHAUSTED);
  assert.equal(stopVerdict, null);
  assert.match(prompts[0], /^The session has spent 0\.3 US dollars of its budget of 0\.3\. /);
});

test('a session with prices but only a token limit is never asked about dollars', async () => {
  const { budget, prompts } = budgetOf({ tokens: 1_000_000, costUsd: null }, () => 5, []);
  budget.spend(usage(10, 10));
  assert.equal(await budget.beforeRequest(), null);
  assert.equal(prompts.length, 0);
});
