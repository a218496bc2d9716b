/**
 * Enough of the bash grammar to judge a command: words exactly as bash makes them (quote removal,
 * `$'…'`, `$"…"`, backslash-newline, brace expansion), control operators, redirections with heredoc
 * bodies, and flags for everything whose value is only known at run time (parameter and arithmetic
 * expansion, command and process substitution, globs, tilde). Whatever this lexer does not follow
 * is flagged `malformed`, which the policy treats as "not provably read-only".
 */
import { readAnsiCQuoted } from './ansi-c-quoting.ts';
import { BRACE_CLOSE, BRACE_COMMA, BRACE_OPEN, expandBraces } from './brace-expansion.ts';

export interface Redirection {
  operator: string;
  target: string;
  /** the text of a heredoc (`<<`, `<<-`); its target is the delimiter */
  body?: string;
}

export interface SimpleCommand {
  argv: string[];
  /** NAME=value words before the command name */
  assignments: string[];
  redirections: Redirection[];
}

export interface ShellScript {
  commands: SimpleCommand[];
  /** control operators between commands: ; && || | |& & newline ( ) */
  operators: string[];
  /** bodies of $(…), `…`, <(…) and >(…), also those inside expansions and unquoted heredocs */
  substitutions: string[];
  /** a parameter or arithmetic expansion ($VAR, ${…}, $((…)), ((…)), an array subscript) */
  expands: boolean;
  /** an unquoted ~ that bash turns into a home directory */
  tilde: boolean;
  /** an unquoted *, ? or [ that bash may turn into file names */
  globs: boolean;
  /** a brace expansion made more words (or other words) than were written */
  braces: boolean;
  heredoc: boolean;
  malformed: boolean;
}

const OPERATORS = ['&&', '||', ';;&', ';;', ';&', '|&', '&>>', '&>', '>>', '>|', '>&', '<<<', '<<-', '<<', '<&', '<>', '|', '&', ';', '(', ')', '<', '>'];
const REDIRECTIONS = new Set(['&>>', '&>', '>>', '>|', '>&', '<<<', '<<-', '<<', '<&', '<>', '<', '>']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;
const MARKERS = new RegExp(`[${BRACE_OPEN}${BRACE_COMMA}${BRACE_CLOSE}]`, 'g');
const MARKED: Record<string, string> = { '{': BRACE_OPEN, ',': BRACE_COMMA, '}': BRACE_CLOSE };
const UNMARKED: Record<string, string> = { [BRACE_OPEN]: '{', [BRACE_COMMA]: ',', [BRACE_CLOSE]: '}' };

type Token = { kind: 'word'; text: string } | { kind: 'op'; text: string };
interface Heredoc {
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
  body?: string;
}

export function parseShell(source: string): ShellScript {
  const lexer = new Lexer(source, 0, false);
  const tokens = lexer.tokenize();
  const script: ShellScript = {
    commands: [],
    operators: [],
    substitutions: lexer.substitutions,
    expands: lexer.expands,
    tilde: lexer.tilde,
    globs: lexer.globs,
    braces: false,
    heredoc: lexer.heredocs.length > 0,
    malformed: lexer.malformed,
  };
  const wordsOf = (marked: string): string[] => {
    const plain = marked.replace(MARKERS, (marker) => UNMARKED[marker]);
    const words = expandBraces(marked);
    if (words === null) script.malformed = true;
    if (words === null || words.length !== 1 || words[0] !== plain) script.braces = true;
    return words ?? [plain];
  };
  let current: SimpleCommand = { argv: [], assignments: [], redirections: [] };
  let heredocIndex = 0;
  const finish = () => {
    if (current.argv.length + current.assignments.length + current.redirections.length > 0) script.commands.push(current);
    current = { argv: [], assignments: [], redirections: [] };
  };
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index];
    if (token.kind === 'word') {
      const assignment = current.argv.length === 0 ? ASSIGNMENT.exec(token.text) : null;
      if (assignment) {
        if (assignment[1]) script.expands = true; // bash evaluates the subscript arithmetically
        current.assignments.push(token.text.replace(MARKERS, (marker) => UNMARKED[marker]));
      } else current.argv.push(...wordsOf(token.text));
    } else if (REDIRECTIONS.has(token.text)) {
      const target = tokens[++index];
      if (target?.kind !== 'word') {
        script.malformed = true;
        continue;
      }
      const targets = wordsOf(target.text);
      if (targets.length !== 1) script.malformed = true; // bash: ambiguous redirect
      const redirection: Redirection = { operator: token.text, target: targets[0] ?? '' };
      if (token.text === '<<' || token.text === '<<-') redirection.body = lexer.heredocs[heredocIndex++]?.body ?? '';
      current.redirections.push(redirection);
    } else {
      finish();
      script.operators.push(token.text);
    }
  }
  finish();
  return script;
}

class Lexer {
  readonly substitutions: string[] = [];
  readonly heredocs: Heredoc[] = [];
  expands = false;
  tilde = false;
  globs = false;
  malformed = false;
  /** where a nested lexer (the body of `$(`) met its closing parenthesis */
  end = -1;
  private readonly tokens: Token[] = [];
  private word = '';
  private inWord = false;
  private wordQuoted = false;
  private awaitingDelimiter: { stripTabs: boolean } | null = null;
  private unreadHeredocs: Heredoc[] = [];
  private depth = 0;

  constructor(
    private readonly source: string,
    private index: number,
    private readonly nested: boolean,
  ) {}

  tokenize(): Token[] {
    const s = this.source;
    while (this.index < s.length) {
      const char = s[this.index];
      const next = s[this.index + 1];
      if (char === ' ' || char === '\t') {
        this.flush();
        this.index++;
      } else if (char === '\n') {
        this.flush();
        this.tokens.push({ kind: 'op', text: '\n' });
        this.index++;
        this.readHeredocBodies();
      } else if (char === '#' && !this.inWord) {
        while (this.index < s.length && s[this.index] !== '\n') this.index++;
      } else if (char === '\\') {
        // A backslash that ends the script: bash keeps it after a one-line script and drops it
        // after a multi-line one, so its meaning is not the lexer's to guess.
        if (next === undefined) this.malformed = true;
        else if (next !== '\n') this.append(next, true);
        this.index += 2;
      } else if (char === "'") {
        const end = s.indexOf("'", this.index + 1);
        if (end === -1) this.malformed = true;
        this.append(s.slice(this.index + 1, end === -1 ? s.length : end), true);
        this.index = end === -1 ? s.length : end + 1;
      } else if (char === '"') {
        this.index++;
        this.readDoubleQuoted(true);
      } else if (char === '$' && next === '\\' && s[this.index + 2] === '\n') {
        // bash joins the lines first, so what follows decides what `$` starts: not guessed here
        this.malformed = true;
        this.index += 3;
      } else if (char === '$' && next === "'") {
        const quoted = readAnsiCQuoted(s, this.index + 2);
        if (quoted === null) this.malformed = true;
        this.append(quoted?.value ?? '', true);
        this.index = quoted?.end ?? s.length;
      } else if (char === '$' && next === '"') {
        this.index += 2;
        this.readDoubleQuoted(true);
      } else if (char === '`' || char === '$') {
        this.readExpansion(false);
      } else if ((char === '<' || char === '>') && next === '(') {
        this.readSubstitution(this.index + 2);
      } else if (char === '(' && next === '(' && !this.inWord) {
        this.readArithmeticCommand();
      } else if (char === '(' && this.inWord && /[?*+@!]$/.test(this.word)) {
        this.malformed = true; // an extglob pattern, which depends on shell options
        this.index++;
      } else {
        const operator = OPERATORS.find((candidate) => s.startsWith(candidate, this.index));
        if (operator && this.nested && operator === ')' && this.depth === 0) {
          this.flush();
          this.end = this.index;
          return this.tokens;
        }
        if (operator) this.readOperator(operator);
        else this.readPlain(char);
      }
    }
    this.flush();
    if (this.nested || this.unreadHeredocs.length > 0 || this.awaitingDelimiter) this.malformed = true;
    this.end = s.length;
    return this.tokens;
  }

  private readPlain(char: string) {
    if (char === '~' && (!this.inWord || /[=:]$/.test(this.word))) this.tilde = true;
    if (char === '*' || char === '?' || char === '[') this.globs = true;
    this.append(MARKED[char] ?? char, false);
    this.index++;
  }

  private append(text: string, quoted: boolean) {
    this.word += text;
    this.inWord = true;
    this.wordQuoted ||= quoted;
  }

  private flush() {
    if (this.inWord) {
      this.tokens.push({ kind: 'word', text: this.word });
      if (this.awaitingDelimiter) {
        const delimiter = this.word.replace(MARKERS, (marker) => UNMARKED[marker]);
        this.unreadHeredocs.push({ delimiter, quoted: this.wordQuoted, stripTabs: this.awaitingDelimiter.stripTabs });
        this.awaitingDelimiter = null;
      }
    }
    this.word = '';
    this.inWord = false;
    this.wordQuoted = false;
  }

  private readOperator(operator: string) {
    // `2>` and `2>&1`: a bare number right before a redirection is its file descriptor.
    if (REDIRECTIONS.has(operator) && this.inWord && !this.wordQuoted && /^\d+$/.test(this.word)) {
      this.word = '';
      this.inWord = false;
    }
    this.flush();
    if (this.awaitingDelimiter) this.malformed = true;
    if (operator === '(') this.depth++;
    if (operator === ')') this.depth--;
    this.tokens.push({ kind: 'op', text: operator });
    this.index += operator.length;
    if (operator === '<<' || operator === '<<-') this.awaitingDelimiter = { stripTabs: operator === '<<-' };
  }

  /**
   * After the opening quote (or over a whole unquoted heredoc body when `closing` is false): only
   * `$`, backticks and backslash before `$`, backtick, `"`, `\` or newline are special.
   */
  private readDoubleQuoted(closing: boolean) {
    const s = this.source;
    this.append('', true);
    while (this.index < s.length && !(closing && s[this.index] === '"')) {
      const char = s[this.index];
      const escapable = closing ? '$`"\\\n' : '$`\\\n';
      if (char === '\\' && escapable.includes(s[this.index + 1] ?? '')) {
        if (s[this.index + 1] !== '\n') this.append(s[this.index + 1], true);
        this.index += 2;
      } else if (char === '$' || char === '`') {
        this.readExpansion(true);
      } else {
        this.append(char, true);
        this.index++;
      }
    }
    if (closing && this.index >= s.length) this.malformed = true;
    this.index++;
  }

  /** At a `$` or a backtick: a substitution, an arithmetic or parameter expansion, or a literal `$`. */
  private readExpansion(quoted: boolean) {
    const s = this.source;
    const start = this.index;
    if (s[start] === '`') {
      let body = '';
      let end = start + 1;
      for (; end < s.length && s[end] !== '`'; end++) {
        if (s[end] === '\\' && '$`\\'.includes(s[end + 1] ?? '')) end++;
        body += s[end] ?? '';
      }
      if (end >= s.length) this.malformed = true;
      this.substitutions.push(body);
      this.append(s.slice(start, end + 1), false);
      this.index = end + 1;
      return;
    }
    const next = s[start + 1] ?? '';
    if (next === '(' && s[start + 2] === '(') {
      const close = findClosing(s, start + 3, '(', ')');
      if (close !== -1 && s[close + 1] === ')') return this.readExpanded(start, start + 3, close, close + 2);
    }
    if (next === '(') return this.readSubstitution(start + 2);
    if (next === '[') return this.readExpanded(start, start + 2, findClosing(s, start + 2, '[', ']'), null);
    if (next === '{') return this.readExpanded(start, start + 2, findClosing(s, start + 2, '{', '}'), null);
    const name = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(s.slice(start + 1));
    if (name) {
      this.expands = true;
      this.append(`$${name[0]}`, false);
      this.index = start + 1 + name[0].length;
      return;
    }
    this.append('$', quoted);
    this.index++;
  }

  /** `${…}`, `$((…))`, `$[…]`: the value is known only at run time; substitutions inside still run. */
  private readExpanded(start: number, innerStart: number, innerEnd: number, stop: number | null) {
    const s = this.source;
    this.expands = true;
    if (innerEnd === -1) this.malformed = true;
    const end = innerEnd === -1 ? s.length : innerEnd;
    this.substitutions.push(...parseShell(s.slice(innerStart, end)).substitutions);
    this.index = stop ?? end + 1;
    this.append(s.slice(start, this.index), false);
  }

  /** `$(…)`, `<(…)` or `>(…)`, read by a nested lexer that stops at its closing parenthesis. */
  private readSubstitution(bodyStart: number) {
    const inner = new Lexer(this.source, bodyStart, true);
    inner.tokenize();
    if (inner.malformed) this.malformed = true;
    const end = Math.min(inner.end, this.source.length);
    this.substitutions.push(this.source.slice(bodyStart, end));
    this.append(this.source.slice(this.index, end + 1), false);
    this.index = end + 1;
  }

  /** `(( … ))`: arithmetic, whose substitutions and array subscripts bash evaluates. */
  private readArithmeticCommand() {
    const s = this.source;
    const close = findClosing(s, this.index + 2, '(', ')');
    if (close === -1 || s[close + 1] !== ')') {
      this.malformed = true;
      this.index = s.length;
      return;
    }
    this.expands = true;
    this.substitutions.push(...parseShell(s.slice(this.index + 2, close)).substitutions);
    this.append(s.slice(this.index, close + 2), false);
    this.index = close + 2;
  }

  /** After a newline: the bodies of heredocs opened on the line just ended. */
  private readHeredocBodies() {
    const s = this.source;
    for (const heredoc of this.unreadHeredocs) {
      const lines: string[] = [];
      for (;;) {
        if (this.index >= s.length) return; // unterminated: left unread, hence malformed
        const newline = s.indexOf('\n', this.index);
        const lineEnd = newline === -1 ? s.length : newline;
        const line = s.slice(this.index, lineEnd);
        this.index = lineEnd + 1;
        const text = heredoc.stripTabs ? line.replace(/^\t+/, '') : line;
        if (text === heredoc.delimiter) break;
        lines.push(text);
      }
      heredoc.body = lines.length > 0 ? `${lines.join('\n')}\n` : '';
      if (!heredoc.quoted) this.scanHeredocExpansions(heredoc.body);
      this.heredocs.push(heredoc);
    }
    this.unreadHeredocs = [];
  }

  private scanHeredocExpansions(body: string) {
    const inner = new Lexer(body, 0, false);
    inner.readDoubleQuoted(false);
    this.substitutions.push(...inner.substitutions);
    this.expands ||= inner.expands;
    this.malformed ||= inner.malformed;
  }
}

/** Index of the bracket closing the one before `start`, skipping quoted text; -1 if none. */
function findClosing(source: string, start: number, open: string, close: string): number {
  let depth = 1;
  for (let index = start; index < source.length; index++) {
    const char = source[index];
    if (char === '\\') index++;
    else if (char === "'") {
      index = source.indexOf("'", index + 1);
      if (index === -1) return -1;
    } else if (char === '"') {
      index++;
      while (index < source.length && source[index] !== '"') index += source[index] === '\\' ? 2 : 1;
    } else if (char === open) depth++;
    else if (char === close && --depth === 0) return index;
  }
  return -1;
}
