/**
 * A check that tree-sitter-bash read every character of a line: text that no node covers (an
 * escaped blank it skipped, `\ #`), or a token wider than itself (`-$` read as `$`), means the
 * tree is not what bash will run, and the line is unknown (CONTRACT.md §21). Only blanks and
 * line continuations may stand between nodes.
 */
import type { TreeCursor } from 'web-tree-sitter';
import type { SyntaxNode } from './bash-parser.ts';

/** Nodes whose text is taken whole: the reader (shell-words.ts) reads them character by character. */
const WHOLE = new Set(['word', 'raw_string', 'ansi_c_string', 'string_content', 'heredoc_content', 'comment', 'number', 'extglob_pattern', 'regex']);
/** Quoted text: every character between its expansions is the quote's own. */
const QUOTED = new Set(['string', 'heredoc_body']);
const SUBSTITUTIONS = new Set(['simple_expansion', 'expansion', 'command_substitution', 'process_substitution', 'arithmetic_expansion']);

/** Why the tree leaves part of `source` unread, or null when it reads all of it. */
export function unreadTextIn(source: string, root: SyntaxNode): string | null {
  const covered = new Uint8Array(source.length);
  const cursor = root.walk();
  try {
    const reason = cover(cursor, source, covered);
    if (reason) return reason;
  } finally {
    cursor.delete();
  }
  for (let index = 0; index < source.length; index++) {
    if (covered[index]) continue;
    const char = source[index];
    if (char === '\\' && source[index + 1] === '\n') index++;
    else if (char !== ' ' && char !== '\t' && char !== '\n' && char !== '\r') return `the parser skipped ${JSON.stringify(source.slice(index, index + 20))}`;
  }
  return null;
}

/**
 * Marks what the cursor's node covers, walking with the cursor (no node objects: this runs over
 * every node of every line). `within`: a quoted node's text is its own except its substitutions.
 */
function cover(cursor: TreeCursor, source: string, covered: Uint8Array, withinQuote = false): string | null {
  const { nodeType: type, startIndex: start, endIndex: end } = cursor;
  if (!cursor.nodeIsNamed && !cursor.nodeIsMissing) {
    // a token inside a string may hold the blanks before it (`" $("`); anything else is a misread
    const text = source.slice(start, end);
    if (text.trimStart() !== type) return `the parser read ${JSON.stringify(text)} as ${JSON.stringify(type)}`;
  }
  const quoted = QUOTED.has(type);
  if (withinQuote && !SUBSTITUTIONS.has(type)) return null;
  if (WHOLE.has(type) || quoted) covered.fill(1, start, end);
  if (WHOLE.has(type) || !cursor.gotoFirstChild()) {
    covered.fill(1, start, end);
    return null;
  }
  try {
    do {
      if (quoted && SUBSTITUTIONS.has(cursor.nodeType)) covered.fill(0, cursor.startIndex, cursor.endIndex);
      const reason = cover(cursor, source, covered, quoted);
      if (reason) return reason;
    } while (cursor.gotoNextSibling());
  } finally {
    cursor.gotoParent();
  }
  return null;
}
