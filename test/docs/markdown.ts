/**
 * What the documentation tests need to know about a markdown file, read with markdown-it (a real
 * CommonMark parser, so links inside code, reference links and nested brackets are told apart the
 * way a renderer tells them apart).
 */
import { readFileSync } from 'node:fs';
import MarkdownIt, { type Token } from 'markdown-it';
import GithubSlugger from 'github-slugger';

const parser = new MarkdownIt({ html: true });

interface MarkdownLink {
  href: string;
  line: number;
}

/** A name in the prose (plain text or `inline code`) that is not the text of a link. */
interface MarkdownMention {
  text: string;
  line: number;
}

interface FencedBlock {
  info: string;
  content: string;
  line: number;
  /** the HTML comment right before the fence, e.g. `<!-- readme-walk -->`, trimmed; null when none */
  marker: string | null;
}

export interface MarkdownDocument {
  links: MarkdownLink[];
  mentions: MarkdownMention[];
  /** the anchors GitHub gives the headings (`## Configuring models` → `configuring-models`) */
  anchors: Set<string>;
  fences: FencedBlock[];
}

export function readMarkdown(path: string): MarkdownDocument {
  const tokens = parser.parse(readFileSync(path, 'utf8'), {});
  const document: MarkdownDocument = { links: [], mentions: [], anchors: new Set(), fences: [] };
  const slugger = new GithubSlugger();
  tokens.forEach((token, index) => {
    const line = (token.map?.[0] ?? 0) + 1;
    if (token.type === 'fence') {
      const previous = tokens[index - 1];
      const marker = previous?.type === 'html_block' ? previous.content.trim() : null;
      document.fences.push({ info: token.info.trim(), content: token.content, line, marker });
    }
    if (token.type !== 'inline') return;
    if (tokens[index - 1]?.type === 'heading_open') document.anchors.add(slugger.slug(token.content));
    collectInline(token.children ?? [], line, document);
  });
  return document;
}

function collectInline(children: Token[], line: number, document: MarkdownDocument): void {
  let insideLink = 0;
  for (const child of children) {
    if (child.type === 'softbreak' || child.type === 'hardbreak') line += 1;
    else if (child.type === 'link_open') {
      insideLink += 1;
      document.links.push({ href: String(child.attrGet('href') ?? ''), line });
    } else if (child.type === 'link_close') {
      insideLink -= 1;
    } else if ((child.type === 'text' || child.type === 'code_inline') && insideLink === 0) {
      document.mentions.push({ text: child.content, line });
    }
  }
}
