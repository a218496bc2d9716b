// After tsc: write dist/api/contract.json, so the built server reads its schemas as JSON and never
// loads TypeBox at start-up (see src/api/contract.ts).
import { writeFileSync } from 'node:fs';

const { contractFromSchemas, serializeContract, CONTRACT_FILE } = await import('../dist/api/contract.js');
writeFileSync(new URL(`../dist/api/${CONTRACT_FILE}`, import.meta.url), serializeContract(await contractFromSchemas()));
