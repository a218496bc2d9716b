/**
 * A shell line as the policy judges it, read from tree-sitter-bash's syntax tree (bash-parser.ts):
 * every simple command wherever it stands (lists, pipelines, `{ }`, `( )`, if, loops, case, function
 * bodies, `!`, command and process substitutions, unquoted heredocs), each with its words
 * (shell-words.ts), assignments and redirections, those of an enclosing compound command included.
 *
 * What the tree does not say exactly makes the line **unknown** (CONTRACT.md §21), with the reason:
 * a syntax error or a missing token, a construct this reader does not model, or a reserved word
 * where a program should stand. A program word that is computed at run time is unknown too; that
 * is judged per invocation (nested-commands.ts), after the wrappers are taken off.
 */
import { parseBash, type SyntaxNode } from './bash-parser.ts';
import { EXPANSIONS, readWord } from './shell-words.ts';
import { restoreDashBeforeHeredoc, unreadTextIn } from './tree-coverage.ts';

export interface Redirection {
  operator: string;
  target: string;
  /** the text of a heredoc (`<<`, `<<-`); its target is the delimiter */
  body?: string;
  /** the here-string or heredoc text holds expansions, known only at run time */
  computed?: boolean;
}

export interface SimpleCommand {
  /** the words; a word computed at run time starts with COMPUTED (see isComputed) */
  argv: string[];
  /** NAME=value words before the command name */
  assignments: string[];
  redirections: Redirection[];
  /**
   * In a pipeline after the first stage: the simple command whose output this one reads, or null
   * when that is something else (a compound command).
   */
  pipedFrom?: SimpleCommand | null;
}

export interface ShellScript {
  commands: SimpleCommand[];
  /** control operators between commands: ; && || | |& & */
  operators: string[];
  /** the named node types of the tree: what constructs the line uses */
  constructs: Set<string>;
  /** command and process substitutions, anywhere */
  substitutions: number;
  /** a parameter or arithmetic expansion ($VAR, ${…}, $((…)), ((…)), an array subscript) */
  expands: boolean;
  tilde: boolean;
  globs: boolean;
  braces: boolean;
  heredoc: boolean;
  /** why the parser's reading of the line cannot be trusted, or null */
  unknown: string | null;
}

/** Marks a word whose value is computed at run time; no real argument holds a NUL byte. */
const COMPUTED = '\0';

export function isComputed(word: string): boolean {
  return word.startsWith(COMPUTED);
}

/** The word as written (computed ones) or as bash makes it. */
export function wordText(word: string): string {
  return isComputed(word) ? word.slice(COMPUTED.length) : word;
}

const OPERATORS = new Set(['&&', '||', '|', '|&', ';', '&']);
const REDIRECTS = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect']);
/** Programs bash would never take from this position: the tree misread the line. */
const RESERVED_WORDS = new Set(['{', '}', '!', 'then', 'else', 'elif', 'fi', 'do', 'done', 'esac', 'in', 'case', 'if', 'while', 'until', 'for', 'select', 'function', '[[', ']]']);
/** Nodes that only hold other nodes: walked through. */
const CONTAINERS = new Set([
  'program', 'list', 'subshell', 'compound_statement', 'negated_command', 'if_statement', 'elif_clause', 'else_clause',
  'while_statement', 'for_statement', 'c_style_for_statement', 'case_statement', 'case_item', 'do_group', 'function_definition',
  'test_command', 'binary_expression', 'unary_expression', 'ternary_expression', 'postfix_expression', 'parenthesized_expression',
  'variable_assignments', 'array', 'subscript', 'command_substitution', 'process_substitution', 'arithmetic_expansion',
  'expansion', 'simple_expansion', 'string', 'translated_string', 'concatenation', 'brace_expression', 'heredoc_body', 'command_name',
]);
/** Leaves and words with nothing to run inside. */
const LEAVES = new Set([
  'word', 'number', 'raw_string', 'ansi_c_string', 'string_content', 'variable_name', 'special_variable_name', 'comment',
  'test_operator', 'regex', 'extglob_pattern', 'file_descriptor', 'heredoc_content', 'heredoc_start', 'heredoc_end',
]);
const HEREDOC_PARTS = new Set(['heredoc_start', 'heredoc_body', 'heredoc_end', 'file_descriptor']);
const ARITHMETIC = new Set(['arithmetic_expansion', 'binary_expression', 'postfix_expression', 'ternary_expression', 'subscript', 'c_style_for_statement']);

/**
 * The word nodes of a command grouped into bash's words: nodes with nothing between them, or only
 * line continuations, are one word that the tree split (`{\x41`, `touc\<newline>h`). null when a
 * backslash stands between two of them, which the tree did not read as bash does.
 */
function joinedWords(source: string, nodes: readonly SyntaxNode[]): SyntaxNode[][] | null {
  const groups: SyntaxNode[][] = [];
  for (const node of nodes) {
    const group = groups.at(-1);
    const previous = group?.at(-1);
    const gap = previous === undefined ? ' ' : source.slice(previous.endIndex, node.startIndex);
    const rest = gap.replaceAll('\\\n', '');
    if (rest.includes('\\')) return null; // `\<tab>`: bash escapes the blank; the tree skips both
    if (group && previous && previous.endIndex <= node.startIndex && rest === '') group.push(node);
    else groups.push([node]);
  }
  return groups;
}

export function parseShell(source: string): ShellScript {
  const root = parseBash(source);
  restoreDashBeforeHeredoc(source, root);
  const reader = new TreeReader(source);
  reader.walk(root, []);
  reader.script.unknown ??= unreadTextIn(source, root);
  return reader.script;
}

/** A script with no command, nothing expanded, nothing unknown: what a reading starts from. */
export function emptyScript(): ShellScript {
  return { commands: [], operators: [], constructs: new Set(), substitutions: 0, expands: false, tilde: false, globs: false, braces: false, heredoc: false, unknown: null };
}

class TreeReader {
  readonly script = emptyScript();

  constructor(private readonly source: string) {}

  private markUnknown(reason: string): void {
    this.script.unknown ??= reason;
  }

  /** `inherited`: the redirections of the compound commands around this node. */
  walk(node: SyntaxNode, inherited: Redirection[], pipedFrom?: SimpleCommand | null): SimpleCommand | null {
    const { type } = node;
    if (!node.isNamed) {
      if (node.isMissing) this.markUnknown(`the line is incomplete (bash expects ${JSON.stringify(type)})`);
      else if (OPERATORS.has(type)) this.script.operators.push(type);
      return null;
    }
    this.script.constructs.add(type);
    if (type === 'comment' && this.source.slice(0, node.startIndex).endsWith('\\\n')) {
      this.markUnknown('a line continuation joins a word and a `#` the parser reads as a comment');
    }
    if (type === 'ERROR') {
      this.markUnknown(`bash syntax agentd's parser cannot read near ${JSON.stringify(node.text.slice(0, 40))}`);
      return null;
    }
    if (EXPANSIONS.has(type) && type !== 'simple_expansion' && type !== 'expansion' && type !== 'arithmetic_expansion') this.script.substitutions++;
    if (type === 'simple_expansion' || type === 'expansion' || ARITHMETIC.has(type)) this.script.expands = true;
    if (type === 'command_substitution' && node.text.startsWith('`') && node.text.slice(1, -1).includes('\\`')) {
      this.markUnknown('backquotes are nested, which the parser does not read');
    }
    if (type === 'command') return this.command(node, inherited, [], pipedFrom);
    if (type === 'declaration_command' || type === 'unset_command') return this.command(node, inherited, [], pipedFrom);
    if (type === 'variable_assignment') return this.assignmentOnly(node, inherited);
    if (type === 'redirected_statement') return this.redirected(node, inherited, pipedFrom);
    if (type === 'pipeline') {
      this.pipeline(node.children, inherited, undefined);
      return null;
    }
    if (type === 'heredoc_body') this.script.heredoc = true;
    if (CONTAINERS.has(type)) {
      for (const child of node.children) this.walk(child, inherited);
      return null;
    }
    if (!LEAVES.has(type)) this.markUnknown(`it uses ${type.replaceAll('_', ' ')}, which agentd's policy does not read`);
    return null;
  }

  /** The stages of a pipeline; `first` is the command that feeds the first of them, if any. */
  private pipeline(children: readonly SyntaxNode[], inherited: Redirection[], first: SimpleCommand | null | undefined): void {
    let previous = first;
    for (const child of children) {
      if (!child.isNamed) {
        this.walk(child, inherited);
        continue;
      }
      previous = this.walk(child, inherited, previous);
    }
  }

  private command(node: SyntaxNode, inherited: Redirection[], extraWords: readonly SyntaxNode[], pipedFrom: SimpleCommand | null | undefined): SimpleCommand {
    const command: SimpleCommand = { argv: [], assignments: [], redirections: [...inherited], pipedFrom };
    const children = node.children;
    const words: SyntaxNode[] = [];
    const tails: SyntaxNode[] = [];
    for (const child of children) {
      if (child.type === 'variable_assignment' && words.length === 0 && node.type === 'command') {
        command.assignments.push(this.assignmentText(child));
      } else if (REDIRECTS.has(child.type)) {
        const after = this.redirection(child, command);
        words.push(...after.words);
        tails.push(...after.tails);
      } else if (!child.isNamed) {
        // `declare`, `export`, `unset`… are the program of their command; in a command, a token such
        // as `==` is part of a word, and a lone `$` before `"…"` is bash's locale translation
        if (node.type !== 'command') command.argv.push(child.type);
        else if (child.type !== '$' || this.source[child.endIndex] !== '"') words.push(child);
      } else words.push(child);
    }
    const groups = joinedWords(this.source, [...words, ...extraWords]);
    if (groups === null) this.markUnknown('a backslash between words is read apart from them');
    for (const word of groups ?? [...words, ...extraWords].map((each) => [each])) this.words(word, command.argv);
    const program = command.argv[0];
    if (program !== undefined && RESERVED_WORDS.has(program)) this.markUnknown(`the parser read the reserved word ${JSON.stringify(program)} as a program`);
    this.script.commands.push(command);
    this.tails(tails, inherited, command);
    return command;
  }

  /** What tree-sitter-bash hangs on a heredoc: the rest of its line (`cat <<EOF | sh`, `… && next`). */
  private tails(tails: readonly SyntaxNode[], inherited: Redirection[], command: SimpleCommand | null): void {
    for (const tail of tails) {
      if (tail.type === 'pipeline') this.pipeline(tail.children, inherited, command);
      else this.walk(tail, inherited);
    }
  }

  /** `c=touch` alone: a command of assignments only. */
  private assignmentOnly(node: SyntaxNode, inherited: Redirection[]): SimpleCommand {
    const command: SimpleCommand = { argv: [], assignments: [this.assignmentText(node)], redirections: [...inherited] };
    this.script.commands.push(command);
    return command;
  }

  private assignmentText(node: SyntaxNode): string {
    for (const child of node.children) this.walk(child, []);
    return node.text;
  }

  /** `cmd > f`, `{ …; } > f`, `cat <<EOF | sh`: the redirections apply to every command of the body. */
  private redirected(node: SyntaxNode, inherited: Redirection[], pipedFrom: SimpleCommand | null | undefined): SimpleCommand | null {
    const body = node.children.find((child) => child.field === 'body');
    const holder: SimpleCommand = { argv: [], assignments: [], redirections: [] };
    const words: SyntaxNode[] = [];
    const tails: SyntaxNode[] = [];
    for (const redirect of node.children.filter((child) => REDIRECTS.has(child.type))) {
      const after = this.redirection(redirect, holder);
      words.push(...after.words);
      tails.push(...after.tails);
    }
    const own = [...inherited, ...holder.redirections];
    let result: SimpleCommand | null = null;
    if (body?.type === 'command') result = this.command(body, own, words, pipedFrom);
    else {
      if (words.length > 0) this.markUnknown('words follow the redirection of a compound command');
      if (body) this.walk(body, own, pipedFrom);
      // the redirection itself runs (`> /dev/sda`, `{ x=1; } > /dev/sda` truncate the device)
      this.script.commands.push({ argv: [], assignments: [], redirections: own });
    }
    this.tails(tails, inherited, result);
    return result;
  }

  /**
   * Adds one redirection to `command`. Returns the words the tree put after its target, which bash
   * gives to the command as arguments (`echo a > f b` is `echo a b > f`), and the rest of the line
   * the tree hangs on a heredoc.
   */
  private redirection(node: SyntaxNode, command: SimpleCommand): { words: SyntaxNode[]; tails: SyntaxNode[] } {
    const operator = node.children.find((child) => !child.isNamed)?.type ?? '';
    if (node.type === 'heredoc_redirect') {
      this.script.heredoc = true;
      const start = node.children.find((child) => child.type === 'heredoc_start');
      const body = node.children.find((child) => child.type === 'heredoc_body');
      if (body) this.walk(body, []);
      const text = body?.text ?? '';
      const computed = body?.namedChildren.some((child) => EXPANSIONS.has(child.type)) ?? false;
      const delimiter = (start?.text ?? '').replace(/['"\\]/g, '');
      command.redirections.push({ operator, target: delimiter, body: operator === '<<-' ? text.replace(/^\t+/gm, '') : text, computed });
      return { words: [], tails: node.namedChildren.filter((child) => !HEREDOC_PARTS.has(child.type)) };
    }
    const [target, ...rest] = node.namedChildren.filter((child) => child.type !== 'file_descriptor');
    const words: string[] = [];
    if (target) this.words([target], words);
    if (words.length > 1) this.markUnknown('a redirection names more than one file (bash: ambiguous redirect)');
    const redirection: Redirection = { operator, target: wordText(words[0] ?? '') };
    if (words[0] !== undefined && isComputed(words[0])) redirection.computed = true;
    command.redirections.push(redirection);
    return { words: rest, tails: [] };
  }

  /** The words of one bash word (see joinedWords), appended to `into`; substitutions inside are walked for commands. */
  private words(nodes: readonly SyntaxNode[], into: string[]): void {
    for (const node of nodes) {
      if (node.type === 'variable_assignment') this.assignmentText(node); // `export A=$(id)`: its substitutions
      else this.walk(node, []);
    }
    const reading = readWord(...nodes);
    if (reading.misread) this.markUnknown('the parser read an expansion as plain text');
    this.script.globs ||= reading.glob;
    this.script.tilde ||= reading.tilde;
    this.script.braces ||= reading.braces;
    if (reading.words === null) {
      this.markUnknown('a brace expansion makes too many words');
      return;
    }
    const computed = reading.computed || reading.glob || reading.braces;
    // bash drops the empty words an expansion makes (`{-exec,}` is `-exec` alone)
    const words = reading.braces ? reading.words.filter((word) => word !== '') : reading.words;
    for (const word of words) into.push(computed ? COMPUTED + word : word);
  }
}
