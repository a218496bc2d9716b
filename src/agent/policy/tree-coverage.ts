/**
 * A check that tree-sitter-bash read every character of a line: text that no node covers (an
 * escaped blank it skipped, `\ #`), or a token wider than itself (`-$` read as `$`), means the
 * tree is not what bash will run, and the line is unknown (CONTRACT.md §21). Only blanks and
 * line continuations may stand between nodes.
 */
import type { SyntaxNode } from './bash-parser.ts';

/** Nodes whose text is taken whole: the reader (shell-words.ts) reads them character by character. */
const WHOLE = new Set(['word', 'raw_string', 'ansi_c_string', 'string_content', 'heredoc_content', 'comment', 'number', 'extglob_pattern', 'regex']);
/** Quoted text: every character between its expansions is the quote's own. */
const QUOTED = new Set(['string', 'heredoc_body']);
const SUBSTITUTIONS = new Set(['simple_expansion', 'expansion', 'command_substitution', 'process_substitution', 'arithmetic_expansion']);

/** Why the tree leaves part of `source` unread, or null when it reads all of it. */
export function unreadTextIn(source: string, root: SyntaxNode): string | null {
  const covered = new Uint8Array(source.length);
  const reason = cover(root, covered);
  if (reason) return reason;
  for (let index = 0; index < source.length; index++) {
    if (covered[index]) continue;
    const char = source[index];
    if (char === '\\' && source[index + 1] === '\n') index++;
    else if (char !== ' ' && char !== '\t' && char !== '\n' && char !== '\r') return `the parser skipped ${JSON.stringify(source.slice(index, index + 20))}`;
  }
  return null;
}

function cover(node: SyntaxNode, covered: Uint8Array): string | null {
  // a token inside a string may hold the blanks before it (`" $("`); anything else is a misread
  if (!node.isNamed && !node.isMissing && node.text.trimStart() !== node.type) return `the parser read ${JSON.stringify(node.text)} as ${JSON.stringify(node.type)}`;
  if (node.childCount === 0 || WHOLE.has(node.type)) {
    covered.fill(1, node.startIndex, node.endIndex);
    return null;
  }
  if (QUOTED.has(node.type)) {
    covered.fill(1, node.startIndex, node.endIndex);
    for (const child of node.namedChildren) {
      if (!SUBSTITUTIONS.has(child.type)) continue;
      covered.fill(0, child.startIndex, child.endIndex);
      const reason = cover(child, covered);
      if (reason) return reason;
    }
    return null;
  }
  for (const child of node.children) {
    const reason = cover(child, covered);
    if (reason) return reason;
  }
  return null;
}
