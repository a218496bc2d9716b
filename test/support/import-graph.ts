/** The relative imports between the source files under a folder, as the compiler would follow them. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** file → the files it imports (static, dynamic and type-only), all as paths relative to `root`. */
export function readImportGraph(root: string): Map<string, string[]> {
  const files = listSources(root);
  return new Map(
    files.map((file) => {
      const text = readFileSync(file, 'utf8');
      // `from '…'` (imports and re-exports, type-only included), `import('…')` and bare `import '…'`
      const targets = [...text.matchAll(/(?:\bfrom|\bimport\s*\(|^import)\s*'(\.{1,2}\/[^']+)'/gm)].map((match) => relative(root, resolve(dirname(file), match[1])));
      return [relative(root, file), targets];
    }),
  );
}

/** Every import cycle met by a depth-first walk, each as its files in import order. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const finished = new Set<string>();
  const path: string[] = [];
  const visit = (file: string) => {
    path.push(file);
    for (const target of graph.get(file) ?? []) {
      const onPath = path.indexOf(target);
      if (onPath >= 0) cycles.push(path.slice(onPath));
      else if (graph.has(target) && !finished.has(target)) visit(target);
    }
    path.pop();
    finished.add(file);
  };
  for (const file of graph.keys()) if (!finished.has(file)) visit(file);
  return cycles;
}

function listSources(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return listSources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}
