/**
 * Fastify compiles every route's schemas with Ajv while the app gets ready: about 90 ms of a
 * 420 ms start-up, and about 8 MB of resident memory for good (Ajv's code generation, and V8's
 * optimizing compiler warmed up on it; docs/BENCHMARKS.md). The built server has its validators
 * generated at build time instead (precompiled-validators.ts): a schema whose digest is there gets
 * that function, and Ajv is never loaded for it.
 *
 * Any other schema (all of them when run from source) is compiled by Fastify's own compiler factory
 * (@fastify/ajv-compiler, with the same Ajv options) when it is first needed: by a request, or by
 * prepare(), which the app runs once it listens and which compiles one schema per turn of the event
 * loop, so a request arriving meanwhile waits for one schema at most (the first, ≈ 35 ms, warms Ajv
 * up; the others take about a millisecond each) and no client's first request pays for the rest.
 *
 * Fastify treats a compiler factory of ours as custom, so it hands header schemas over without
 * lower-casing their names: ours are written in lower case (api/parameters.ts).
 */
import AjvCompiler from '@fastify/ajv-compiler';
import { createHash } from 'node:crypto';

interface ValidatorDefinition {
  schema: unknown;
}

export interface Validator {
  (data: unknown): boolean | PromiseLike<unknown>;
  errors?: unknown;
}

type Compiler = (definition: ValidatorDefinition) => Validator;
type BuildCompiler = (externalSchemas: Record<string, unknown>, options: unknown) => Compiler;

/** A validator that compiles on its first call, or when asked to. */
export interface LazyValidator extends Validator {
  readonly compiled: boolean;
  compile(): void;
}

export interface ValidatorsOnFirstUse {
  /**
   * For Fastify's `schemaController.compilersFactory.buildValidator`. (The package's typings
   * describe its compiler as taking a bare schema; Fastify and the package itself pass and take
   * `{ schema, method, url, httpPart }`, as typed here.)
   */
  buildValidator: AjvCompiler.BuildCompilerFromPool;
  /**
   * Compiles every validator handed out that nothing has compiled yet, one per turn of the event
   * loop. A schema Ajv refuses is left to fail its own route, as it would on first use.
   */
  prepare(): Promise<void>;
  /** How many validators handed out are not compiled yet. */
  readonly uncompiled: number;
  /** How many validators handed out were generated at build time. */
  readonly precompiled: number;
}

/** What a precompiled validator is found by: the digest of its schema, as Fastify hands it over. */
export function schemaKey(schema: unknown): string {
  return createHash('sha256').update(JSON.stringify(schema)).digest('base64url');
}

export function validatorsOnFirstUse(precompiled: Readonly<Record<string, () => Validator>> = {}): ValidatorsOnFirstUse {
  const buildFastifyCompiler = AjvCompiler() as unknown as BuildCompiler;
  const handedOut: LazyValidator[] = [];
  let restored = 0;
  const buildValidator: BuildCompiler = (externalSchemas, options) => {
    let compile: Compiler | undefined;
    return (definition) => {
      const key = schemaKey(definition.schema);
      const restore = Object.hasOwn(precompiled, key) ? precompiled[key] : undefined;
      // a generated module is evaluated on first use too, but that costs no compiler
      if (restore) {
        restored += 1;
        return compiledOnFirstUse(restore);
      }
      const validator = compiledOnFirstUse(() => (compile ??= buildFastifyCompiler(externalSchemas, options))(definition));
      handedOut.push(validator);
      return validator;
    };
  };
  return {
    buildValidator: buildValidator as unknown as AjvCompiler.BuildCompilerFromPool,
    async prepare() {
      for (const validator of handedOut) {
        if (validator.compiled) continue;
        try {
          validator.compile();
        } catch {
          // its route answers the error on first use
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
    get uncompiled() {
      return handedOut.filter((validator) => !validator.compiled).length;
    },
    get precompiled() {
      return restored;
    },
  };
}

/** A validator that compiles on its first call; Fastify reads `errors` off the function it was given. */
export function compiledOnFirstUse(compile: () => Validator): LazyValidator {
  let compiled: Validator | undefined;
  const ensureCompiled = () => (compiled ??= compile());
  const validate = ((data: unknown) => {
    const run = ensureCompiled();
    const valid = run(data);
    validate.errors = run.errors;
    return valid;
  }) as LazyValidator;
  Object.defineProperty(validate, 'compiled', { get: () => compiled !== undefined });
  validate.compile = ensureCompiled;
  return validate;
}
