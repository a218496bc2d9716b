import { readFile } from 'node:fs/promises';
import type { Operation } from './operations.ts';

/** The operations and named schemas: everything the HTTP layer and /openapi.json are built from. */
export interface Contract {
  operations: Operation[];
  namedSchemas: Record<string, unknown>;
}

export const CONTRACT_FILE = 'contract.json';

/**
 * The built server reads the contract as plain JSON that the build wrote next to this module
 * (`npm run build`), so start-up does not load TypeBox (about a third of it). Run from source, the
 * contract is taken from the TypeBox schemas themselves.
 */
export async function loadContract(): Promise<Contract> {
  try {
    return JSON.parse(await readFile(new URL(`./${CONTRACT_FILE}`, import.meta.url), 'utf8')) as Contract;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return contractFromSchemas();
}

export async function contractFromSchemas(): Promise<Contract> {
  const [{ OPERATIONS }, { NAMED_SCHEMAS }] = await Promise.all([import('./operations.ts'), import('./named-schemas.ts')]);
  return { operations: OPERATIONS, namedSchemas: NAMED_SCHEMAS };
}

/** JSON Schema is JSON: TypeBox's own markers are symbols, which JSON leaves out. */
export function serializeContract(contract: Contract): string {
  return JSON.stringify(contract);
}
