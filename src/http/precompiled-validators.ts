/**
 * The route schemas' validators, compiled when the server was built: run from source there are
 * none, and every schema is compiled by Ajv on first use (validators-on-first-use.ts). The build
 * (scripts/emit-validators.mjs) writes this module's JavaScript anew in dist/ with one entry per
 * schema, keyed by the schema's digest (schemaKey), so a validator is only ever used for the exact
 * schema it was generated from.
 */
import type { Validator } from './validators-on-first-use.ts';

export const PRECOMPILED_VALIDATORS: Readonly<Record<string, () => Validator>> = {};
