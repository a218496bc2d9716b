/**
 * The maintained bash parser under the policy: tree-sitter-bash (the grammar Codex reads commands
 * with) run by web-tree-sitter, both WebAssembly. Loading is asynchronous and happens once, before
 * the first shell call is judged (authorize.ts awaits it); parsing is synchronous after that, so the
 * policy itself (decide.ts) stays a pure, synchronous function.
 *
 * The two .wasm files are found next to the running module (dist/bundle/, where scripts/bundle.mjs
 * copies them), else in node_modules (running from source with tsx, or from tsc's dist/).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Language, Parser, TreeCursor } from 'web-tree-sitter';

/**
 * A node of the syntax tree, copied out of WebAssembly into plain JavaScript. Every property of
 * web-tree-sitter's own node objects is a call into WebAssembly, and the policy reads each node
 * many times: a 4 KiB line cost milliseconds that way. The tree is copied once, with one cursor,
 * and its text is sliced from the line by index.
 */
export class SyntaxNode {
  readonly children: SyntaxNode[] = [];

  constructor(
    private readonly source: string,
    readonly type: string,
    readonly isNamed: boolean,
    readonly isMissing: boolean,
    readonly startIndex: number,
    readonly endIndex: number,
    /** the field its parent names it by; read for a redirected statement's `body` only */
    readonly field: string | null,
  ) {}

  get text(): string {
    return this.source.slice(this.startIndex, this.endIndex);
  }

  get namedChildren(): SyntaxNode[] {
    return this.children.filter((child) => child.isNamed);
  }
}

interface Loaded {
  parser: Parser;
  /** per node type id: its name and whether it is named (ids past the table are ERROR, named) */
  types: string[];
  named: boolean[];
}

let loaded: Loaded | null = null;
let loading: Promise<void> | null = null;

function wasmFile(name: string, packagePath: string): Uint8Array {
  const beside = fileURLToPath(new URL(name, import.meta.url));
  const file = existsSync(beside) ? beside : createRequire(import.meta.url).resolve(packagePath);
  return readFileSync(file);
}

/** Loads the parser once; later calls return the same promise. */
export function loadBashParser(): Promise<void> {
  loading ??= (async () => {
    const treeSitter = await import('web-tree-sitter');
    await treeSitter.Parser.init({ wasmBinary: wasmFile('web-tree-sitter.wasm', 'web-tree-sitter/web-tree-sitter.wasm') });
    const bash = await treeSitter.Language.load(wasmFile('tree-sitter-bash.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm'));
    const parser = new treeSitter.Parser();
    parser.setLanguage(bash);
    loaded = { parser, ...typeTable(bash) };
  })();
  return loading;
}

function typeTable(language: Language): Pick<Loaded, 'types' | 'named'> {
  const types: string[] = [];
  const named: boolean[] = [];
  for (let id = 0; id < language.nodeTypeCount; id++) {
    types.push(language.nodeTypeForId(id) ?? 'ERROR');
    named.push(language.nodeTypeIsNamed(id));
  }
  return { types, named };
}

/** Parses `source` into a tree of plain nodes; nothing of it lives in WebAssembly memory. */
export function parseBash(source: string): SyntaxNode {
  if (loaded === null) throw new Error('the bash parser is not loaded: await loadBashParser() first');
  const tree = loaded.parser.parse(source);
  if (tree === null) throw new Error('the bash parser returned no tree');
  const cursor = tree.walk();
  try {
    return copyTree(cursor, source, loaded);
  } finally {
    cursor.delete();
    tree.delete();
  }
}

/** Walks the whole tree once, depth first, without recursion (a line may nest deeply). */
function copyTree(cursor: TreeCursor, source: string, table: Loaded): SyntaxNode {
  const root = copyNode(cursor, source, table, null);
  const path = [root];
  for (;;) {
    const leaf = path[path.length - 1];
    // tokens (anonymous ones and `word`) have no children: one call into WebAssembly saved per node
    if (!leaf.isNamed || leaf.type === 'word' || !cursor.gotoFirstChild()) {
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) return root;
        path.pop();
      }
      path.pop();
    }
    const parent = path[path.length - 1];
    const node = copyNode(cursor, source, table, parent.type === 'redirected_statement' ? cursor.currentFieldName : null);
    parent.children.push(node);
    path.push(node);
  }
}

function copyNode(cursor: TreeCursor, source: string, table: Loaded, field: string | null): SyntaxNode {
  const id = cursor.nodeTypeId;
  const start = cursor.startIndex;
  const end = cursor.endIndex;
  // only a zero-width node can be one the parser made up to finish the line
  const missing = start === end && cursor.nodeIsMissing;
  return new SyntaxNode(source, table.types[id] ?? 'ERROR', table.named[id] ?? true, missing, start, end, field);
}
