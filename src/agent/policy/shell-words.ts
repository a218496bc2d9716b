/**
 * The words of a tree-sitter-bash word node as bash makes them: quote removal, backslashes,
 * `$'…'`, `$"…"` and brace expansion. What is only known at run time (parameter and arithmetic
 * expansion, command and process substitution) stays as written and marks the word `computed`.
 */
import { readAnsiCQuoted } from './ansi-c-quoting.ts';
import { BRACE_CLOSE, BRACE_COMMA, BRACE_OPEN, expandBraces } from './brace-expansion.ts';
import type { SyntaxNode } from './bash-parser.ts';

export interface WordReading {
  /** the words bash makes (more than one after brace expansion); null when the expansion is too large */
  words: string[] | null;
  /** a part is expanded at run time ($, backquote, substitution, arithmetic) */
  computed: boolean;
  /** an unquoted *, ? or [ that bash may turn into file names */
  glob: boolean;
  /** an unquoted ~ that bash turns into a home directory */
  tilde: boolean;
  /** brace expansion made other words than were written */
  braces: boolean;
  /** the tree holds as plain text what bash expands (a `$name` or backquote it did not read) */
  misread: boolean;
}

export const EXPANSIONS = new Set(['simple_expansion', 'expansion', 'command_substitution', 'process_substitution', 'arithmetic_expansion']);
/** a word of characters bash gives no meaning to: itself, the common case */
const PLAIN = /^[A-Za-z0-9_./:=+%@-]+$/;
const MARKED: Record<string, string> = { '{': BRACE_OPEN, ',': BRACE_COMMA, '}': BRACE_CLOSE };
const MARKERS = new RegExp(`[${BRACE_OPEN}${BRACE_COMMA}${BRACE_CLOSE}]`, 'g');
const UNMARKED: Record<string, string> = { [BRACE_OPEN]: '{', [BRACE_COMMA]: ',', [BRACE_CLOSE]: '}' };

interface Reader {
  marked: string;
  misread: boolean;
  computed: boolean;
  glob: boolean;
  tilde: boolean;
}

/**
 * One word of bash from the nodes tree-sitter-bash read it as: usually one node, several when the
 * tree split a word bash keeps whole (`{\x41`, `touc\<newline>h`: nothing but line continuations
 * between them).
 */
export function readWord(...nodes: SyntaxNode[]): WordReading {
  if (nodes.length === 1 && nodes[0].children.length === 0 && PLAIN.test(nodes[0].text)) {
    return { words: [nodes[0].text], computed: false, glob: false, tilde: false, braces: false, misread: false };
  }
  const reader: Reader = { marked: '', misread: false, computed: false, glob: false, tilde: false };
  for (const node of nodes) append(node, reader);
  const plain = reader.marked.replace(MARKERS, (marker) => UNMARKED[marker]);
  const words = reader.marked.includes(BRACE_OPEN) ? expandBraces(reader.marked) : [plain];
  return { words, computed: reader.computed, glob: reader.glob, tilde: reader.tilde, braces: words === null || words.length !== 1 || words[0] !== plain, misread: reader.misread };
}

function append(node: SyntaxNode, reader: Reader): void {
  const { type, text } = node;
  if (type === 'comment') reader.misread = true; // `{#\<newline>a` is one word to bash
  else if (EXPANSIONS.has(type)) {
    reader.computed = true;
    reader.marked += text;
  } else if (type === 'raw_string') reader.marked += text.slice(1, -1);
  else if (type === 'ansi_c_string') reader.marked += readAnsiCQuoted(text, 2)?.value ?? '';
  else if (type === 'string') appendDoubleQuoted(node, reader);
  else if (type === 'translated_string') for (const child of node.namedChildren) append(child, reader);
  else if (node.children.length > 0) {
    // concatenation, brace_expression, command_name, variable_assignment: the pieces in order
    let at = node.startIndex;
    for (const child of node.children) {
      if (child.type === '$') {
        // `$"…"` is "…" (bash's locale translation); any other lone `$` is an expansion the tree did not read
        if (text[child.endIndex - node.startIndex] === '"') continue;
        reader.misread = true;
      }
      let gap = text.slice(at - node.startIndex, child.startIndex - node.startIndex);
      if (child.type === 'string' && gap.endsWith('$')) gap = gap.slice(0, -1); // `$"…"` is "…" (bash's locale translation)
      appendUnquoted(gap, reader);
      append(child, reader);
      at = child.endIndex;
    }
    if (at < node.endIndex) appendUnquoted(text.slice(at - node.startIndex), reader);
  } else appendUnquoted(text, reader);
}

/** `"…"`: the text between its expansions keeps its characters; a backslash escapes only $ ` " \ and newline. */
function appendDoubleQuoted(node: SyntaxNode, reader: Reader): void {
  const inner = node.text;
  let at = 1;
  for (const child of node.namedChildren) {
    if (!EXPANSIONS.has(child.type)) continue;
    reader.marked += unescapeDoubleQuoted(inner.slice(at, child.startIndex - node.startIndex));
    append(child, reader);
    at = child.endIndex - node.startIndex;
  }
  reader.marked += unescapeDoubleQuoted(inner.slice(at, inner.length - 1));
}

function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\([$`"\\\n])/g, (_, char: string) => (char === '\n' ? '' : char));
}

function appendUnquoted(text: string, reader: Reader): void {
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === '\\') {
      const next = text[++index];
      if (next === undefined) reader.misread = true; // `\<tab>`: bash escapes the blank, the tree ends the word
      if (next !== undefined && next !== '\n') reader.marked += next;
      continue;
    }
    if (char === '`' || char === ' ' || char === '\t' || char === '\n' || (char === '$' && /^[\w{(@*#?!$-]/.test(text.slice(index + 1, index + 2)))) reader.misread = true;
    if (char === '*' || char === '?' || (char === '[' && text.includes(']', index))) reader.glob = true;
    if (char === '~' && (reader.marked === '' || /[=:]$/.test(reader.marked))) reader.tilde = true;
    reader.marked += MARKED[char] ?? char;
  }
}

/** An argv as a person would type it: plain words bare, the others single-quoted. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(' ');
}
