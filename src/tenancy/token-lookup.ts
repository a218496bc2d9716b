/**
 * Which tenant a bearer token selects. Kept apart from the registry's loading so that the request
 * path does not load the registry's schema (and TypeBox with it).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Tenant, TenantRegistry } from '../config/tenant-registry.ts';

/**
 * The tenant a presented bearer token belongs to, or null. Every credential is compared, each
 * through SHA-256 digests of equal length, so neither the token's length nor which credential
 * matched shows in the timing.
 */
export function tenantForToken(registry: TenantRegistry, presentedToken: string): Tenant | null {
  const presented = sha256(presentedToken);
  let match: Tenant | null = null;
  for (const { digest, tenant } of credentialDigests(registry)) {
    if (timingSafeEqual(digest, presented)) match = tenant;
  }
  return match;
}

const digestsByRegistry = new WeakMap<TenantRegistry, { digest: Buffer; tenant: Tenant }[]>();

/** Computed once per registry object (a reloaded registry is a new object). */
function credentialDigests(registry: TenantRegistry): { digest: Buffer; tenant: Tenant }[] {
  return digestsByRegistry.get(registry) ?? digestOnce(registry);
}

function digestOnce(registry: TenantRegistry): { digest: Buffer; tenant: Tenant }[] {
  const digests = registry.tenants.flatMap((tenant) => tenant.credentials.map((credential) => ({ digest: sha256(credential.token), tenant })));
  digestsByRegistry.set(registry, digests);
  return digests;
}

function sha256(text: string): Buffer {
  const hash = createHash('sha256');
  // Stryker disable next-line StringLiteral: an empty encoding is UTF-8 to Node's hash too, the same digest
  return hash.update(text, 'utf8').digest();
}
