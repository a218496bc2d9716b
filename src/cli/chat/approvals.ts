import type { HumanRequest } from '../../client/index.ts';
import type { RequestChoice } from './render.ts';

/** Options that need text typed after the key: the value of the resolve (a budget's raise: the new limit). */
const OPTIONS_WITH_TEXT = new Set(['custom', 'request_changes', 'raise']);
const WORDS_QUESTION: Record<string, string> = { deny: 'why (the model is told): ', raise: 'new limit: ' };
const KEYS = '123456789abcdefghijklmnopqrstuvwxyz'.split('');

/** --yolo and --deny: every approval of the run gets this decision, unasked. */
export type AutoAnswer = 'allow_once' | 'deny';

/** The keys of a request: one per option, plus "deny, saying why" where deny is one. */
export function choicesOf(request: HumanRequest): RequestChoice[] {
  const choices: RequestChoice[] = request.options.map((option, index) => ({ key: KEYS[index], decision: option, label: option, asksWords: OPTIONS_WITH_TEXT.has(option) }));
  if (request.options.includes('deny') && choices.length < KEYS.length) {
    choices.push({ key: KEYS[choices.length], decision: 'deny', label: 'deny, saying why', asksWords: true });
  }
  return choices;
}

/** The choice a typed key, or a piped line (a key or an option's name), stands for. */
export function choiceFor(choices: RequestChoice[], text: string): RequestChoice | undefined {
  return choices.find((choice) => choice.key === text) ?? choices.find((choice) => choice.decision === text);
}

export function wordsQuestion(decision: string): string {
  return WORDS_QUESTION[decision] ?? 'your words: ';
}

/** The decision --yolo or --deny gives this request: only approvals (a request offering it) are answered. */
export function autoDecision(request: HumanRequest, auto: AutoAnswer | null): AutoAnswer | null {
  return auto !== null && request.options.includes(auto) ? auto : null;
}

/** Said at start when --yolo or --deny is given. */
export function autoAnswerNotice(auto: AutoAnswer): string {
  return auto === 'allow_once' ? '--yolo: every approval of this run is answered allow_once, unasked' : '--deny: every approval of this run is answered deny, unasked';
}

/** Piped input ended while a request waits: what a script can do instead. */
export const UNANSWERED =
  'input ended while a request waits for an answer: give it as the next input line (its key, e.g. 1, or an option such as allow_once or deny), or pass --yolo or --deny to answer every approval of the run';
