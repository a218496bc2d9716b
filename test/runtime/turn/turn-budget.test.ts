// The budget raise's value (CONTRACT.md §19; issue 39 item 8): only a whole number of tokens or a
// plain decimal of dollars is taken. A value the pattern took by its prefix ("0.5x", "1e9",
// "2.50 dollars") would become NaN or another number and the budget silently no limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TurnBudget } from '../../../src/runtime/turn/turn-budget.ts';
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
