/**
 * A check that tree-sitter-bash read every character of a line: text that no node covers (an
 * escaped blank it skipped, `\ #`), or a token wider than itself (`-$` read as `$`), means the
 * tree is not what bash will run, and the line is unknown (CONTRACT.md §21). Only blanks and
 * line continuations may stand between nodes.
 */
import { SyntaxNode } from './bash-parser.ts';

/** Nodes whose text is taken whole: the reader (shell-words.ts) reads them character by character. */
const WHOLE = new Set(['word', 'raw_string', 'ansi_c_string', 'string_content', 'heredoc_content', 'comment', 'number', 'extglob_pattern', 'regex']);
/** Quoted text: every character between its expansions is the quote's own. */
const QUOTED = new Set(['string', 'heredoc_body']);
const SUBSTITUTIONS = new Set(['simple_expansion', 'expansion', 'command_substitution', 'process_substitution', 'arithmetic_expansion']);

/**
 * tree-sitter-bash 0.25 drops a lone `-` word that stands right before a heredoc (`python3 - <<'EOF'`,
 * `cat - <<EOF`; the common idiom for "read the program from standard input"), though bash gives it
 * to the command. When such a `-`, between blanks, is all the tree skipped between a command and
 * its heredoc, it is put back as the command's last word; any other skipped text stays unread.
 */
export function restoreDashBeforeHeredoc(source: string, root: SyntaxNode): void {
  const pending = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    pending.push(...node.children);
    if (node.type !== 'redirected_statement') continue;
    const at = node.children.findIndex((child) => child.field === 'body');
    const [body, redirect] = [node.children[at], node.children[at + 1]];
    if (at === -1 || body.type !== 'command' || redirect?.type !== 'heredoc_redirect') continue;
    const dash = /^[ \t]+-[ \t]+$/.exec(source.slice(body.endIndex, redirect.startIndex));
    if (dash === null) continue;
    const start = redirect.startIndex - dash[0].trimStart().length;
    body.children.push(new SyntaxNode(source, 'word', true, false, start, start + 1, null));
  }
}

/** Why the tree leaves part of `source` unread, or null when it reads all of it. */
export function unreadTextIn(source: string, root: SyntaxNode): string | null {
  const covered = new Uint8Array(source.length);
  const reason = cover(root, source, covered);
  if (reason) return reason;
  for (let index = 0; index < source.length; index++) {
    if (covered[index]) continue;
    const char = source[index];
    if (char === '\\' && source[index + 1] === '\n') index++;
    else if (char !== ' ' && char !== '\t' && char !== '\n' && char !== '\r') return `the parser skipped ${JSON.stringify(source.slice(index, index + 20))}`;
  }
  return null;
}

/** Marks what `node` covers. `withinQuote`: a quoted node's text is its own except its substitutions. */
function cover(node: SyntaxNode, source: string, covered: Uint8Array, withinQuote = false): string | null {
  const { type, startIndex: start, endIndex: end } = node;
  if (!node.isNamed && !node.isMissing) {
    // a token inside a string may hold the blanks before it (`" $("`); anything else is a misread
    const text = source.slice(start, end);
    if (text.trimStart() !== type) return `the parser read ${JSON.stringify(text)} as ${JSON.stringify(type)}`;
  }
  const quoted = QUOTED.has(type);
  if (withinQuote && !SUBSTITUTIONS.has(type)) return null;
  if (WHOLE.has(type) || quoted || node.children.length === 0) covered.fill(1, start, end);
  if (WHOLE.has(type)) return null;
  for (const child of node.children) {
    if (quoted && SUBSTITUTIONS.has(child.type)) covered.fill(0, child.startIndex, child.endIndex);
    const reason = cover(child, source, covered, quoted);
    if (reason) return reason;
  }
  return null;
}
