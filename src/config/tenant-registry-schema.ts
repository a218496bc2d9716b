/** The shape of the tenant registry file (SPEC.md §2, CONTRACT.md §11) and one-line messages for its violations. */
import { Type } from 'typebox';
import { Value } from 'typebox/value';

const MAX_TENANTS = 256;
const MAX_CREDENTIALS_PER_TENANT = 16;

/** Canonical form only: lower-case hex in 8-4-4-4-12 groups (the nil UUID is refused separately). */
const CANONICAL_UUID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const PATTERN_MEANINGS: Record<string, string> = { [CANONICAL_UUID]: 'must be a canonical lower-case UUID' };

const closed = { additionalProperties: false } as const;

const CredentialEntry = Type.Object({ id: Type.String({ pattern: CANONICAL_UUID }), tokenFile: Type.String({ minLength: 1 }) }, closed);

const TenantEntry = Type.Object(
  {
    id: Type.String({ pattern: CANONICAL_UUID }),
    workspaceRoot: Type.String({ minLength: 1 }),
    credentials: Type.Array(CredentialEntry, { minItems: 1, maxItems: MAX_CREDENTIALS_PER_TENANT }),
  },
  closed,
);

const RegistryDocument = Type.Object(
  { version: Type.Literal(1), tenants: Type.Array(TenantEntry, { minItems: 1, maxItems: MAX_TENANTS }) },
  closed,
);

export interface RegistryDocumentShape {
  version: 1;
  tenants: { id: string; workspaceRoot: string; credentials: { id: string; tokenFile: string }[] }[];
}

/** Null when the document has the registry's shape, else `[field, problem]` of the first violation. */
export function firstShapeViolation(document: unknown): [field: string, problem: string] | null {
  for (const error of Value.Errors(RegistryDocument, document)) {
    const field = fieldName(error.instancePath);
    const params = error.params as Record<string, unknown>;
    switch (error.keyword) {
      case 'boolean':
        return [field, 'unknown field'];
      case 'additionalProperties':
        return [joinField(field, (params.additionalProperties as string[])[0]), 'unknown field'];
      case 'required':
        return [joinField(field, (params.requiredProperties as string[])[0]), 'missing'];
      case 'const':
        return [field, `must be ${JSON.stringify(params.allowedValue)}`];
      case 'minItems':
        return [field, `must have at least ${params.limit} entr${params.limit === 1 ? 'y' : 'ies'}`];
      case 'maxItems':
        return [field, `must have at most ${params.limit} entries`];
      case 'minLength':
        return [field, 'must not be empty'];
      case 'pattern':
        return [field, PATTERN_MEANINGS[params.pattern as string] ?? error.message];
      case 'type':
        return [field, `must be ${article(params.type as string)}`];
      default:
        return [field, error.message];
    }
  }
  return null;
}

/** `/tenants/1/credentials/0` → `tenants[1].credentials[0]`; odd keys are quoted so the message stays on one line. */
function fieldName(instancePath: string): string {
  if (instancePath === '') return '(document)';
  return instancePath
    .slice(1)
    .split('/')
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((field, segment) => (/^\d+$/.test(segment) ? `${field}[${segment}]` : joinField(field, segment)), '');
}

function joinField(field: string, key: string): string {
  const base = field === '(document)' ? '' : field;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === '' ? key : `${base}.${key}`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
