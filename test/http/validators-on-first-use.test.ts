import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { compiledOnFirstUse, schemaKey, validatorsOnFirstUse, type Validator } from '../../src/http/validators-on-first-use.ts';

function appWith(schemas: Record<string, unknown>) {
  // Fastify's default removes unknown properties; agentd's Ajv options refuse them, and must still apply
  const app = Fastify({ ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: validatorsOnFirstUse().buildValidator } } });
  for (const [path, body] of Object.entries(schemas)) app.post(path, { schema: { body } }, async () => ({ ok: true }));
  return app;
}

describe('route validators compiled on first use', () => {
  it('gets ready without compiling any schema: one Ajv cannot compile fails its route only, on its first request', async () => {
    const app = appWith({ '/broken': { type: 'no-such-type' }, '/fine': { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } });
    await app.ready();
    assert.equal((await app.inject({ method: 'POST', url: '/fine', payload: { n: 1 } })).statusCode, 200);
    assert.equal((await app.inject({ method: 'POST', url: '/broken', payload: {} })).statusCode, 500);
    await app.close();
  });

  it('validates as Fastify does, with the Ajv options given: the errors of a refused body reach the 400', async () => {
    const app = appWith({ '/sessions': { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false } });
    const refused = await app.inject({ method: 'POST', url: '/sessions', payload: { n: 'one' } });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.json().message, /body\/n must be integer/);
    const extra = await app.inject({ method: 'POST', url: '/sessions', payload: { n: 1, x: 2 } });
    assert.match(extra.json().message, /must NOT have additional properties/);
    assert.equal((await app.inject({ method: 'POST', url: '/sessions', payload: { n: 2 } })).statusCode, 200);
    await app.close();
  });

  it('prepare() compiles what no request has yet, one schema per turn, and leaves a schema Ajv refuses to its route', async () => {
    const validators = validatorsOnFirstUse();
    const app = Fastify({ schemaController: { compilersFactory: { buildValidator: validators.buildValidator } } });
    app.post('/broken', { schema: { body: { type: 'no-such-type' } } }, async () => ({ ok: true }));
    app.post('/fine', { schema: { body: { type: 'object' }, querystring: { type: 'object' } } }, async () => ({ ok: true }));
    app.post('/used', { schema: { body: { type: 'object' } } }, async () => ({ ok: true }));
    await app.ready();
    assert.equal(validators.uncompiled, 4);
    assert.equal((await app.inject({ method: 'POST', url: '/used', payload: {} })).statusCode, 200);
    assert.equal(validators.uncompiled, 3);
    let turns = 0;
    let counting = true;
    const count = () => {
      turns += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    await validators.prepare();
    counting = false;
    assert.equal(validators.uncompiled, 1, 'all compiled but the schema Ajv refuses');
    assert.ok(turns >= 2, `other work ran between the schemas (${turns} turns)`);
    assert.equal((await app.inject({ method: 'POST', url: '/broken', payload: {} })).statusCode, 500);
    assert.equal((await app.inject({ method: 'POST', url: '/fine', payload: {} })).statusCode, 200);
    await app.close();
  });

  it('compiles once, on the first call, and hands each call its own errors', () => {
    let compilations = 0;
    const validate = compiledOnFirstUse(() => {
      compilations += 1;
      const compiled = (data: unknown) => {
        compiled.errors = data === 1 ? null : [{ message: `not 1: ${String(data)}` }];
        return data === 1;
      };
      compiled.errors = null as unknown;
      return compiled;
    });
    assert.equal(compilations, 0);
    assert.equal(validate(2), false);
    assert.deepEqual(validate.errors, [{ message: 'not 1: 2' }]);
    assert.equal(validate(1), true);
    assert.equal(validate.errors, null);
    assert.equal(compilations, 1);
  });

  it('compiles when asked to, before any call, and only once', () => {
    let compilations = 0;
    const validate = compiledOnFirstUse(() => {
      compilations += 1;
      return () => true;
    });
    assert.equal(validate.compiled, false);
    validate.compile();
    assert.equal(validate.compiled, true);
    assert.equal(validate({}), true);
    assert.equal(compilations, 1);
  });
});

describe('route validators generated at build time', () => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false };
  const appWithPrecompiled = (precompiled: Record<string, () => Validator>) => {
    const validators = validatorsOnFirstUse(precompiled);
    const app = Fastify({ schemaController: { compilersFactory: { buildValidator: validators.buildValidator } } });
    app.post('/sessions', { schema: { body: schema } }, async () => ({ ok: true }));
    return { app, validators };
  };

  it('uses the generated validator of exactly this schema, and compiles nothing', async () => {
    let calls = 0;
    // as Ajv's generated code does, it says why on its own `errors`
    const unlucky: Validator = (data) => {
      calls++;
      const valid = (data as { n?: unknown }).n !== 13;
      unlucky.errors = valid ? null : [{ instancePath: '/n', message: 'must not be 13' }];
      return valid;
    };
    const { app, validators } = appWithPrecompiled({ [schemaKey(schema)]: () => unlucky });
    await app.ready();
    assert.equal(validators.precompiled, 1);
    assert.equal(validators.uncompiled, 0);
    assert.equal((await app.inject({ method: 'POST', url: '/sessions', payload: { n: 13 } })).statusCode, 400, 'the generated function decided');
    assert.equal((await app.inject({ method: 'POST', url: '/sessions', payload: { n: 'x' } })).statusCode, 200, 'and Ajv was not asked');
    assert.equal(calls, 2);
    await app.close();
  });

  it('never uses a validator generated from another schema (a stale build): that schema is compiled by Ajv', async () => {
    const stale = { ...schema, properties: { n: { type: 'string' } } };
    const { app, validators } = appWithPrecompiled({ [schemaKey(stale)]: () => () => true });
    await app.ready();
    assert.equal(validators.precompiled, 0);
    assert.equal(validators.uncompiled, 1);
    assert.equal((await app.inject({ method: 'POST', url: '/sessions', payload: { n: 'x' } })).statusCode, 400);
    assert.equal((await app.inject({ method: 'POST', url: '/sessions', payload: { n: 1 } })).statusCode, 200);
    await app.close();
  });

});
