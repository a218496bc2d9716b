/**
 * Fastify compiles every route's schemas with Ajv while the app gets ready: about 90 ms of a
 * 420 ms start-up. This compiler factory is Fastify's own (@fastify/ajv-compiler, with the same
 * Ajv options) but compiles each schema when it is first needed: by a request, or by prepare(),
 * which the app runs once it listens and which compiles one schema per turn of the event loop, so
 * a request arriving meanwhile waits for one schema at most (the first, ≈ 35 ms, warms Ajv up;
 * the others take about a millisecond each) and no client's first request pays for the rest.
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
}

export function validatorsOnFirstUse(): ValidatorsOnFirstUse {
  const buildFastifyCompiler = AjvCompiler() as unknown as BuildCompiler;
  const handedOut: LazyValidator[] = [];
  const buildValidator: BuildCompiler = (externalSchemas, options) => {
    let compile: Compiler | undefined;
    return (definition) => {
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
