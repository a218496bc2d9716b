/**
 * The tenant registry (SPEC.md §2, CONTRACT.md §11): loaded and checked whole before the server
 * binds, every failure one line naming the file and the field. Tokens are kept out of the
 * registry's enumerable fields so that logging or serialising it cannot leak one.
 */
import path from 'node:path';
import { UsageError } from './flags.ts';
import { readPrivateFile, readTokenFile } from './token-file.ts';
import { firstShapeViolation, type RegistryDocumentShape } from './tenant-registry-schema.ts';
import { canonicalPath, firstRootViolation, type ProtectedPath } from './tenant-workspace-roots.ts';


export interface TenantCredential {
  readonly id: string;
  readonly tokenFile: string;
  /** non-enumerable: absent from JSON and logs */
  readonly token: string;
}

export interface Tenant {
  readonly id: string;
  readonly workspaceRoot: string;
  readonly credentials: readonly TenantCredential[];
}

export interface TenantRegistry {
  readonly version: 1;
  readonly tenants: readonly Tenant[];
}

export interface RegistryContext {
  stateDir: string;
  tenantStateRoot: string;
  /** the uid that must own the registry and every token file */
  serverUid: number;
  /** the server's other files no root may hold (models file, MCP config), by how a refusal names them */
  otherServerFiles?: readonly { name: string; path: string }[];
}

export class TenantRegistryError extends UsageError {}

export const MAX_REGISTRY_BYTES = 1024 * 1024;
/** Token files have no size rule of their own; anything past this is not a token. */
const MAX_TOKEN_FILE_BYTES = 64 * 1024;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

export function loadTenantRegistry(registryPath: string, context: RegistryContext): TenantRegistry {
  const prefix = `--tenant-registry ${registryPath}`;
  const fail = (field: string, problem: string): never => {
    throw new TenantRegistryError(`${prefix}: ${field}: ${problem}`);
  };
  const text = rethrown(() => readPrivateFile(registryPath, { label: prefix, ownerUid: context.serverUid, exactMode: 0o600, maxBytes: MAX_REGISTRY_BYTES }));
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return fail('(document)', `not valid JSON (${(error as Error).message})`);
  }
  const violation = firstShapeViolation(document);
  if (violation) return fail(...violation);
  const shape = document as RegistryDocumentShape;

  checkIdentifiers(shape, fail);

  const tokenOwners = new Map<string, string>();
  const tenants = shape.tenants.map((tenant, tenantIndex): Tenant => {
    const credentials = tenant.credentials.map((credential, credentialIndex): TenantCredential => {
      const field = `tenants[${tenantIndex}].credentials[${credentialIndex}].tokenFile`;
      if (!path.isAbsolute(credential.tokenFile)) fail(field, `${credential.tokenFile} must be an absolute path`);
      const token = rethrown(() =>
        readTokenFile(credential.tokenFile, { label: `${prefix}: ${field}`, ownerUid: context.serverUid, exactMode: 0o600, maxBytes: MAX_TOKEN_FILE_BYTES }),
      );
      const sameToken = tokenOwners.get(token);
      if (sameToken) fail(field, `holds the same token as ${sameToken}`);
      tokenOwners.set(token, field);
      return withHiddenToken({ id: credential.id, tokenFile: credential.tokenFile }, token);
    });
    return Object.freeze({ id: tenant.id, workspaceRoot: tenant.workspaceRoot, credentials: Object.freeze(credentials) });
  });

  const protectedPaths: ProtectedPath[] = [
    { name: 'the state dir', path: canonicalPath(context.stateDir), kind: 'directory' },
    { name: 'the tenant state root', path: canonicalPath(context.tenantStateRoot), kind: 'directory' },
    { name: 'the registry file', path: canonicalPath(registryPath), kind: 'file' },
    ...(context.otherServerFiles ?? []).map((file) => ({ name: file.name, path: canonicalPath(file.path), kind: 'file' as const })),
    ...tenants.flatMap((tenant, tenantIndex) =>
      tenant.credentials.map((credential, credentialIndex) => ({
        name: `tenants[${tenantIndex}].credentials[${credentialIndex}].tokenFile`,
        path: canonicalPath(credential.tokenFile),
        kind: 'file' as const,
      })),
    ),
  ];
  const roots = tenants.map((tenant, index) => ({ field: `tenants[${index}].workspaceRoot`, root: tenant.workspaceRoot }));
  const rootViolation = firstRootViolation(roots, protectedPaths);
  if (rootViolation) return fail(...rootViolation);

  return Object.freeze({ version: 1, tenants: Object.freeze(tenants) });
}

function checkIdentifiers(shape: RegistryDocumentShape, fail: (field: string, problem: string) => never): void {
  const tenantIds = new Map<string, string>();
  const credentialIds = new Map<string, string>();
  const claim = (seen: Map<string, string>, id: string, field: string) => {
    if (id === NIL_UUID) fail(field, 'the nil UUID is not allowed');
    const earlier = seen.get(id);
    if (earlier) fail(field, `duplicate id ${id} (also ${earlier})`);
    seen.set(id, field);
  };
  shape.tenants.forEach((tenant, tenantIndex) => {
    claim(tenantIds, tenant.id, `tenants[${tenantIndex}].id`);
    tenant.credentials.forEach((credential, credentialIndex) => {
      claim(credentialIds, credential.id, `tenants[${tenantIndex}].credentials[${credentialIndex}].id`);
    });
  });
}

function withHiddenToken(credential: { id: string; tokenFile: string }, token: string): TenantCredential {
  Object.defineProperty(credential, 'token', { value: token, enumerable: false });
  return Object.freeze(credential as TenantCredential);
}

/** File-rule failures arrive as UsageError; they are registry errors too. */
function rethrown<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof UsageError && !(error instanceof TenantRegistryError)) throw new TenantRegistryError(error.message);
    throw error;
  }
}
