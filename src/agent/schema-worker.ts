/**
 * The schema worker (a worker thread, started by structured-output.ts on the first outputSchema):
 * compiles schemas and validates answers off the event loop. Keeps the newest compiled schemas by
 * their JSON text; one evicted is compiled again when an answer needs it.
 */
import { parentPort } from 'node:worker_threads';
import { compileValidator } from './schema-validation.ts';

export type SchemaJob = { id: number; kind: 'compile'; json: string } | { id: number; kind: 'check'; json: string; value: unknown };
export type SchemaAnswer = { id: number; problems: string[] } | { id: number; refused: string };

const KEPT = 32;
const validators = new Map<string, Promise<(value: unknown) => string[]>>();

function validatorOf(json: string): Promise<(value: unknown) => string[]> {
  let validator = validators.get(json);
  if (!validator) {
    validator = compileValidator(JSON.parse(json) as object);
    validators.set(json, validator);
    validator.catch(() => validators.delete(json));
    if (validators.size > KEPT) validators.delete(validators.keys().next().value!);
  }
  return validator;
}

parentPort?.on('message', (job: SchemaJob) => {
  validatorOf(job.json).then(
    (validate) => parentPort!.postMessage({ id: job.id, problems: job.kind === 'check' ? validate(job.value) : [] } satisfies SchemaAnswer),
    (error: unknown) => parentPort!.postMessage({ id: job.id, refused: (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300) } satisfies SchemaAnswer),
  );
});
