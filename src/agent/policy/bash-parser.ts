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
import type { Node, Parser } from 'web-tree-sitter';

export type { Node as SyntaxNode };

let parser: Parser | null = null;
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
    const ready = new treeSitter.Parser();
    ready.setLanguage(bash);
    parser = ready;
  })();
  return loading;
}

/**
 * Parses `source` and hands its root node to `read`; the tree lives in WebAssembly memory and is
 * freed when `read` returns, so nothing of it may escape.
 */
export function withBashTree<T>(source: string, read: (root: Node) => T): T {
  if (parser === null) throw new Error('the bash parser is not loaded: await loadBashParser() first');
  const tree = parser.parse(source);
  if (tree === null) throw new Error('the bash parser returned no tree');
  try {
    return read(tree.rootNode);
  } finally {
    tree.delete();
  }
}
