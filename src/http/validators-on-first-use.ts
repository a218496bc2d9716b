/**
 * Fastify compiles every route's schemas with Ajv while the app gets ready: about 90 ms of a
 * 420 ms start-up, for routes a given client may never call. This compiler factory is Fastify's
 * own (@fastify/ajv-compiler, with the same Ajv options) but builds the Ajv instance on the first
 * validated request and compiles each schema on the first request that needs it; every later
 * request runs the compiled validator.
 *
 * Fastify treats a compiler factory of ours as custom, so it hands header schemas over without
 * lower-casing their names: ours are written in lower case (api/parameters.ts).
 */
import AjvCompiler from '@fastify/ajv-compiler';

interface ValidatorDefinition {
  schema: unknown;
}

interface Validator {
  (data: unknown): boolean | PromiseLike<unknown>;
  errors?: unknown;
}

type BuildCompiler = (externalSchemas: Record<string, unknown>, options: unknown) => (definition: ValidatorDefinition) => Validator;

/**
 * The factory for Fastify's `schemaController.compilersFactory.buildValidator`. (The package's
 * typings describe its compiler as taking a bare schema; Fastify and the package itself pass and
 * take `{ schema, method, url, httpPart }`, as typed here.)
 */
export function buildValidatorsOnFirstUse(): AjvCompiler.BuildCompilerFromPool {
  const buildFastifyCompiler = AjvCompiler() as unknown as BuildCompiler;
  const build: BuildCompiler = (externalSchemas, options) => {
    let compile: ((definition: ValidatorDefinition) => Validator) | undefined;
    return (definition) => compiledOnFirstUse(() => (compile ??= buildFastifyCompiler(externalSchemas, options))(definition));
  };
  return build as unknown as AjvCompiler.BuildCompilerFromPool;
}

/** A validator that compiles on its first call; Fastify reads `errors` off the function it was given. */
export function compiledOnFirstUse(compile: () => Validator): Validator {
  let compiled: Validator | undefined;
  const validate: Validator = (data) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  return validate;
}
