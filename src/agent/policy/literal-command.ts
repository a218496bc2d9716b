/**
 * Commands that need no shell at all: an argv array, or a string of plain literal words with
 * nothing bash would expand or interpret. For such a string, splitting it here gives exactly the
 * argv bash would build, so the shell tool can exec it directly.
 */

/** an unquoted word of characters bash gives no meaning to */
const PLAIN_WORD = /[A-Za-z0-9_@%+=:,./-]+/y;
/** a whole word in single quotes (everything inside is literal) */
const SINGLE_QUOTED = /'([^']*)'/y;
/** a whole word in double quotes without $, backtick, backslash or ! inside */
const DOUBLE_QUOTED = /"([^"$`\\!]*)"/y;
const BLANKS = /[ \t]*/y;
const PROGRAM = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;
const RESERVED_WORDS = new Set(['case', 'coproc', 'do', 'done', 'elif', 'else', 'esac', 'fi', 'for', 'function', 'if', 'in', 'select', 'then', 'time', 'until', 'while']);

/**
 * The argv of a command that needs no shell, or null. A string qualifies when it is one simple
 * command whose words are each entirely plain characters, entirely single-quoted, or entirely
 * double-quoted without anything special inside, and whose first word is a plain program name.
 */
export function literalArgvOf(command: string | readonly string[]): string[] | null {
  if (typeof command !== 'string') return command.length > 0 && command[0] !== '' ? [...command] : null;
  const argv: string[] = [];
  let index = skipBlanks(command, 0);
  while (index < command.length) {
    const word = readWord(command, index);
    if (word === null) return null;
    argv.push(word.value);
    index = skipBlanks(command, word.end);
    if (index === word.end && index < command.length) return null; // two words glued together
  }
  if (argv.length === 0 || !PROGRAM.test(argv[0]) || RESERVED_WORDS.has(argv[0])) return null;
  return argv;
}

function readWord(source: string, index: number): { value: string; end: number } | null {
  for (const [pattern, group] of [[PLAIN_WORD, 0], [SINGLE_QUOTED, 1], [DOUBLE_QUOTED, 1]] as const) {
    pattern.lastIndex = index;
    const match = pattern.exec(source);
    if (match) return { value: match[group], end: pattern.lastIndex };
  }
  return null;
}

function skipBlanks(source: string, index: number): number {
  BLANKS.lastIndex = index;
  BLANKS.exec(source);
  return BLANKS.lastIndex;
}
