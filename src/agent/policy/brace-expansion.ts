/**
 * Bash brace expansion (`{a,b}`, `{1..3}`, `{a..e..2}`) on words whose unquoted braces and commas
 * the lexer marked with private-use characters, so quoted ones (`'{a,b}'`) stay literal.
 */

export const BRACE_OPEN = '\uE000';
export const BRACE_COMMA = '\uE001';
export const BRACE_CLOSE = '\uE002';

/** More words than this from one word is treated as a malformed command rather than expanded. */
const MAX_BRACE_WORDS = 256;

const MARKERS = new RegExp(`[${BRACE_OPEN}${BRACE_COMMA}${BRACE_CLOSE}]`, 'g');
const LITERAL: Record<string, string> = { [BRACE_OPEN]: '{', [BRACE_COMMA]: ',', [BRACE_CLOSE]: '}' };

/** The words bash makes of one marked word, markers turned back into their characters; null when too many. */
export function expandBraces(marked: string): string[] | null {
  const words = expand(marked, { remaining: MAX_BRACE_WORDS });
  return words === null ? null : words.map((word) => word.replace(MARKERS, (marker) => LITERAL[marker]));
}

function expand(word: string, budget: { remaining: number }): string[] | null {
  for (let open = word.indexOf(BRACE_OPEN); open !== -1; open = word.indexOf(BRACE_OPEN, open + 1)) {
    const group = groupAt(word, open);
    if (group === TOO_MANY) return null;
    if (group === null) continue;
    const prefix = word.slice(0, open);
    const suffix = word.slice(group.close + 1);
    const results: string[] = [];
    for (const alternative of group.alternatives) {
      const expanded = expand(prefix + alternative + suffix, budget);
      if (expanded === null) return null;
      results.push(...expanded);
    }
    return results;
  }
  if (--budget.remaining < 0) return null;
  return [word];
}

/** The alternatives of the brace group opening at `open`, or null when it is not an expansion. */
const TOO_MANY = 'too many';

function groupAt(word: string, open: number): { close: number; alternatives: string[] } | typeof TOO_MANY | null {
  let depth = 0;
  const commas: number[] = [];
  for (let index = open + 1; index < word.length; index++) {
    const char = word[index];
    if (char === BRACE_OPEN) depth++;
    else if (char === BRACE_CLOSE && depth > 0) depth--;
    else if (char === BRACE_CLOSE) {
      if (commas.length === 0) {
        const sequence = sequenceOf(word.slice(open + 1, index));
        return sequence === null || sequence === TOO_MANY ? sequence : { close: index, alternatives: sequence };
      }
      const bounds = [open, ...commas, index];
      return { close: index, alternatives: bounds.slice(1).map((end, at) => word.slice(bounds[at] + 1, end)) };
    } else if (char === BRACE_COMMA && depth === 0) commas.push(index);
  }
  return null;
}

/** `1..5`, `05..10..2`, `a..e`: the words of a sequence expression, or null. */
function sequenceOf(inner: string): string[] | typeof TOO_MANY | null {
  const numeric = /^([-+]?\d+)\.\.([-+]?\d+)(?:\.\.([-+]?\d+))?$/.exec(inner);
  const letters = /^([A-Za-z])\.\.([A-Za-z])(?:\.\.([-+]?\d+))?$/.exec(inner);
  const match = numeric ?? letters;
  if (!match) return null;
  const start = numeric ? Number(match[1]) : match[1].charCodeAt(0);
  const end = numeric ? Number(match[2]) : match[2].charCodeAt(0);
  const step = Math.abs(Number(match[3] ?? 1)) || 1;
  const count = Math.floor(Math.abs(end - start) / step) + 1;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || count > MAX_BRACE_WORDS) return TOO_MANY;
  const zeroPadded = numeric !== null && (/^[-+]?0\d/.test(match[1]) || /^[-+]?0\d/.test(match[2]));
  const width = zeroPadded ? Math.max(match[1].replace('+', '').length, match[2].replace('+', '').length) : 0;
  const words: string[] = [];
  for (let at = 0; at < count; at++) {
    const value = start <= end ? start + at * step : start - at * step;
    if (!numeric) words.push(String.fromCharCode(value));
    else words.push(width > 0 ? pad(value, width) : String(value));
  }
  return words;
}

function pad(value: number, width: number): string {
  const digits = String(Math.abs(value)).padStart(value < 0 ? width - 1 : width, '0');
  return value < 0 ? `-${digits}` : digits;
}
