/**
 * Ajv over a client's JSON Schema (CONTRACT.md §22), run in the schema worker (schema-worker.ts):
 * compiling a 64 KiB schema takes the better part of a second of CPU, which must not hold the
 * server's event loop. Ajv is the validator Fastify already brings; `pattern`s run on RE2 (re2js),
 * as the search tool's do, so a schema cannot make a regular expression backtrack for minutes.
 */
import { RE2JS } from 're2js';

/** Validation errors reported at most. */
const MAX_PROBLEMS = 10;

type ValidateFunction = ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null };
type AjvInstance = { compile(schema: object): ValidateFunction };
let ajvLoading: Promise<AjvInstance> | null = null;

function ajv(): Promise<AjvInstance> {
  ajvLoading ??= (async () => {
    const [ajvModule, formatsModule] = await Promise.all([import('ajv'), import('ajv-formats')]);
    // CommonJS through two loaders: Node's import gives the named export, the bundle's interop may
    // give only module.exports as `default` (with the class on it)
    const Ajv = (ajvModule.Ajv ?? (ajvModule.default as unknown as { Ajv: typeof ajvModule.Ajv }).Ajv) as typeof ajvModule.Ajv;
    const formats = formatsModule.default as unknown as { default?: unknown };
    const addFormats = (typeof formats === 'function' ? formats : formats.default) as (ajv: unknown) => void;
    // optimize off: Ajv's optimizing pass costs more than it saves on a schema compiled once
    // (900 properties: about 1.3 s with it, 0.6 s without, docs/API.md "Structured results")
    const instance = new Ajv({ allErrors: true, strict: false, code: { regExp: re2Engine, optimize: false } });
    addFormats(instance);
    return { compile: (schema) => instance.compile(schema) as ValidateFunction };
  })();
  return ajvLoading;
}

/** Ajv's regular-expression engine interface over RE2 (Ajv's `code.regExp` option). */
const re2Engine = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (text: string) => compiled.matcher(text).find() };
  },
  { code: 're2' },
);

/** The schema's validator: the problems of a value, none when it is valid. Throws when Ajv refuses the schema. */
export async function compileValidator(schema: object): Promise<(value: unknown) => string[]> {
  const validate = (await ajv()).compile(schema);
  return (value) => {
    if (validate(value)) return [];
    return (validate.errors ?? []).slice(0, MAX_PROBLEMS).map((error) => `${error.instancePath || '(root)'}: ${error.message ?? 'is not valid'}`);
  };
}
