import { Lexer, type Token } from 'marked';
import { createEmphasize, common } from 'emphasize';
import { paint } from './style.ts';

const emphasize = createEmphasize(common);

/**
 * Markdown for a terminal, one line at a time, so an answer is rendered as it streams: headings,
 * list bullets, quotes, rules and inline code, emphasis and links (inline tokens by marked's
 * lexer), and fenced code coloured for its language by emphasize (highlight.js). A code line is
 * coloured on its own, so a construct spanning lines (a block comment) loses its colour after the
 * first line; the text itself is never changed. Input lines are already inert (no control
 * characters).
 */
export class MarkdownLines {
  private fence: { marker: string; language: string | null } | null = null;

  render(line: string): string {
    if (this.fence) return this.codeLine(line);
    const fence = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(line);
    if (fence) {
      this.fence = { marker: fence[1], language: fence[2] && emphasize.registered(fence[2]) ? fence[2] : null };
      return paint('dim', `╭─ ${fence[2] || 'code'}`);
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const text = inline(heading[2]);
      return heading[1].length <= 2 ? paint('bold', paint('magenta', text)) : paint('bold', text);
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return paint('dim', '─'.repeat(40));
    const quote = /^\s{0,3}>\s?(.*)$/.exec(line);
    if (quote) return `${paint('dim', '│')} ${paint('italic', inline(quote[1]))}`;
    const bullet = /^(\s*)[-*+]\s+(\[[ xX]\]\s+)?(.*)$/.exec(line);
    if (bullet) return `${bullet[1]}${paint('cyan', '•')} ${bullet[2] ? `${bullet[2].trim()} ` : ''}${inline(bullet[3])}`;
    const numbered = /^(\s*)(\d{1,9}[.)])\s+(.*)$/.exec(line);
    if (numbered) return `${numbered[1]}${paint('cyan', numbered[2])} ${inline(numbered[3])}`;
    return inline(line);
  }

  private codeLine(line: string): string {
    const fence = this.fence!;
    const closing = new RegExp(`^\\s{0,3}${fence.marker[0] === '`' ? '`' : '~'}{${fence.marker.length},}\\s*$`);
    if (closing.test(line)) {
      this.fence = null;
      return paint('dim', '╰─');
    }
    const coloured = fence.language ? emphasize.highlight(fence.language, line).value : paint('yellow', line);
    return `${paint('dim', '│')} ${coloured}`;
  }
}

function inline(text: string): string {
  return Lexer.lexInline(text).map(renderToken).join('');
}

function renderToken(token: Token): string {
  const inner = () => ('tokens' in token && token.tokens ? token.tokens.map(renderToken).join('') : ('text' in token ? String(token.text) : token.raw));
  switch (token.type) {
    case 'codespan':
      return paint('yellow', token.text);
    case 'strong':
      return paint('bold', inner());
    case 'em':
      return paint('italic', inner());
    case 'del':
      return paint('strikethrough', inner());
    case 'link':
      return token.text === token.href ? paint('underline', token.href) : `${paint('underline', inner())} ${paint('dim', `(${token.href})`)}`;
    case 'escape':
      return token.text;
    case 'text':
      return 'tokens' in token && token.tokens ? inner() : token.text;
    default:
      return token.raw;
  }
}
