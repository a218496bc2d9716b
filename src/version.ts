import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * agentd's version, from the package.json nearest above this module: run from src/, from tsc's
 * dist/ or from the bundle in dist/bundle/, the module sits at a different depth.
 */
function readVersion(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(directory, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`agentd: no package.json above ${fileURLToPath(import.meta.url)}`);
    directory = parent;
  }
}

export const VERSION: string = readVersion();
