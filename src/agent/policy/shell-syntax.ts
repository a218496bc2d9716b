/**
 * Just enough of the bash grammar to judge a command: words with quotes removed, control operators,
 * redirections, and the things that make a command impossible to judge statically (expansions,
 * command substitutions). Heredoc bodies are skipped, not read as commands. Anything this parser
 * does not understand is flagged `malformed`, which the policy treats as "not provably read-only".
 */

export interface Redirection {
  operator: string;
  target: string;
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
  /** bodies of $(…), `…`, <(…) and >(…): commands run to produce text */
  substitutions: string[];
  /** a $ expansion ($VAR, ${…}, $((…))) outside single quotes */
  expands: boolean;
  /** a word starts with ~, which bash expands to a home directory */
  tilde: boolean;
  heredoc: boolean;
  malformed: boolean;
}

const OPERATORS = ['&&', '||', ';;', '|&', '&>>', '&>', '>>', '>|', '>&', '<<<', '<<-', '<<', '<&', '<>', '|', '&', ';', '(', ')', '<', '>'];
const REDIRECTIONS = new Set(['&>>', '&>', '>>', '>|', '>&', '<<<', '<<-', '<<', '<&', '<>', '<', '>']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

type Token = { kind: 'word'; text: string } | { kind: 'op'; text: string };

export function parseShell(source: string): ShellScript {
  const lexer = new Lexer(source);
  const script: ShellScript = {
    commands: [],
    operators: [],
    substitutions: lexer.substitutions,
    expands: false,
    tilde: false,
    heredoc: false,
    malformed: false,
  };
  const tokens = lexer.tokenize();
  Object.assign(script, { expands: lexer.expands, tilde: lexer.tilde, heredoc: lexer.heredoc, malformed: lexer.malformed });
  let current: SimpleCommand = { argv: [], assignments: [], redirections: [] };
  const finish = () => {
    if (current.argv.length + current.assignments.length + current.redirections.length > 0) script.commands.push(current);
    current = { argv: [], assignments: [], redirections: [] };
  };
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index];
    if (token.kind === 'word') {
      if (current.argv.length === 0 && ASSIGNMENT.test(token.text)) current.assignments.push(token.text);
      else current.argv.push(token.text);
    } else if (REDIRECTIONS.has(token.text)) {
      const target = tokens[index + 1];
      if (target?.kind !== 'word') script.malformed = true;
      else current.redirections.push({ operator: token.text, target: target.text });
      index++;
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
  expands = false;
  tilde = false;
  heredoc = false;
  malformed = false;
  private readonly tokens: Token[] = [];
  private word = '';
  private inWord = false;
  private wordQuoted = false;
  private pendingHeredocs: { delimiter: string; stripTabs: boolean }[] = [];
  private index = 0;

  constructor(private readonly source: string) {}

  tokenize(): Token[] {
    const s = this.source;
    while (this.index < s.length) {
      const char = s[this.index];
      if (char === ' ' || char === '\t') {
        this.flush();
        this.index++;
      } else if (char === '\n') {
        this.flush();
        this.tokens.push({ kind: 'op', text: '\n' });
        this.index++;
        this.skipHeredocBodies();
      } else if (char === '#' && !this.inWord) {
        while (this.index < s.length && s[this.index] !== '\n') this.index++;
      } else if (char === '\\') {
        if (s[this.index + 1] !== '\n') this.append(s[this.index + 1] ?? '', true);
        this.index += 2;
      } else if (char === "'") {
        const end = s.indexOf("'", this.index + 1);
        if (end === -1) this.malformed = true;
        this.append(s.slice(this.index + 1, end === -1 ? s.length : end), true);
        this.index = end === -1 ? s.length : end + 1;
      } else if (char === '"') {
        this.readDoubleQuoted();
      } else if (char === '`' || char === '$') {
        this.readExpansion();
      } else if ((char === '<' || char === '>') && s[this.index + 1] === '(') {
        this.readSubstitution(this.index + 2);
      } else {
        const operator = OPERATORS.find((candidate) => s.startsWith(candidate, this.index));
        if (operator) this.readOperator(operator);
        else {
          if (char === '~' && !this.inWord) this.tilde = true;
          this.append(char, false);
          this.index++;
        }
      }
    }
    this.flush();
    if (this.pendingHeredocs.length > 0) this.malformed = true;
    return this.tokens;
  }

  private append(text: string, quoted: boolean) {
    this.word += text;
    this.inWord = true;
    this.wordQuoted ||= quoted;
  }

  private flush() {
    if (this.inWord) this.tokens.push({ kind: 'word', text: this.word });
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
    this.tokens.push({ kind: 'op', text: operator });
    this.index += operator.length;
    if (operator === '<<' || operator === '<<-') this.readHeredocDelimiter(operator === '<<-');
  }

  private readDoubleQuoted() {
    const s = this.source;
    this.index++;
    this.append('', true);
    while (this.index < s.length && s[this.index] !== '"') {
      const char = s[this.index];
      if (char === '\\' && '$`"\\\n'.includes(s[this.index + 1] ?? '')) {
        if (s[this.index + 1] !== '\n') this.append(s[this.index + 1], true);
        this.index += 2;
      } else if (char === '$' || char === '`') {
        this.readExpansion();
      } else {
        this.append(char, true);
        this.index++;
      }
    }
    if (this.index >= s.length) this.malformed = true;
    this.index++;
  }

  /** At a `$` or a backtick: a substitution, an arithmetic or parameter expansion, or a literal `$`. */
  private readExpansion() {
    const s = this.source;
    if (s[this.index] === '`') {
      let end = this.index + 1;
      while (end < s.length && s[end] !== '`') end += s[end] === '\\' ? 2 : 1;
      if (end >= s.length) this.malformed = true;
      this.substitutions.push(s.slice(this.index + 1, end));
      this.append(s.slice(this.index, end + 1), false);
      this.index = end + 1;
      return;
    }
    const next = s[this.index + 1] ?? '';
    if (next === '(' && s[this.index + 2] !== '(') {
      this.readSubstitution(this.index + 2);
      return;
    }
    if (next === '(' || next === '{') {
      const end = next === '(' ? findClosing(s, this.index + 2, '(', ')') : s.indexOf('}', this.index + 2);
      if (end === -1) this.malformed = true;
      const stop = end === -1 ? s.length : end + 1;
      this.expands = true;
      this.append(s.slice(this.index, stop), false);
      this.index = stop;
      return;
    }
    const name = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(s.slice(this.index + 1));
    if (name) {
      this.expands = true;
      this.append(`$${name[0]}`, false);
      this.index += 1 + name[0].length;
      return;
    }
    this.append('$', false);
    this.index++;
  }

  /** `$(…)`, `<(…)` or `>(…)`; `bodyStart` is the index after the opening parenthesis. */
  private readSubstitution(bodyStart: number) {
    const end = findClosing(this.source, bodyStart, '(', ')');
    if (end === -1) this.malformed = true;
    const stop = end === -1 ? this.source.length : end;
    this.substitutions.push(this.source.slice(bodyStart, stop));
    this.append(this.source.slice(this.index, stop + 1), false);
    this.index = stop + 1;
  }

  private readHeredocDelimiter(stripTabs: boolean) {
    const s = this.source;
    while (s[this.index] === ' ' || s[this.index] === '\t') this.index++;
    const match = /^(['"]?)([^\s;&|<>()'"]+)\1/.exec(s.slice(this.index));
    if (!match) {
      this.malformed = true;
      return;
    }
    this.heredoc = true;
    this.pendingHeredocs.push({ delimiter: match[2], stripTabs });
    // The delimiter stands where the redirection target would be.
    this.tokens.push({ kind: 'word', text: match[2] });
    this.index += match[0].length;
  }

  /** After a newline: the bodies of heredocs opened on the line just ended are data, not commands. */
  private skipHeredocBodies() {
    const s = this.source;
    for (const { delimiter, stripTabs } of this.pendingHeredocs) {
      for (;;) {
        if (this.index >= s.length) return; // unterminated: left pending, hence malformed
        const lineEnd = s.indexOf('\n', this.index) === -1 ? s.length : s.indexOf('\n', this.index);
        const line = s.slice(this.index, lineEnd);
        this.index = lineEnd + 1;
        if ((stripTabs ? line.replace(/^\t+/, '') : line) === delimiter) break;
      }
    }
    this.pendingHeredocs = [];
  }
}

/** Index of the parenthesis closing the one before `start`, skipping quoted text; -1 if none. */
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
