import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_STATUS, type ErrorCode } from '../../src/domain/errors.ts';
import { RETRY_AFTER_SECONDS } from '../../src/http/error-reply.ts';
import { clientErrorToApiError } from '../../src/http/client-error.ts';
import { literalizeUndecodablePath } from '../../src/http/request-limits.ts';

describe('HTTP edge rules', () => {
  it('gives every 429 and 503 code a Retry-After in seconds, and no other code', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS) as [ErrorCode, number][]) {
      const seconds = RETRY_AFTER_SECONDS[code];
      if (status === 429 || status === 503) assert.ok(Number.isInteger(seconds) && seconds! > 0, code);
      else assert.equal(seconds, undefined, code);
    }
  });

  it('maps what Node refuses to parse onto contract codes', () => {
    const codeOf = (code: string) => clientErrorToApiError(Object.assign(new Error('x'), { code })).code;
    assert.equal(codeOf('HPE_HEADER_OVERFLOW'), 'request_header_fields_too_large');
    assert.equal(codeOf('HPE_INVALID_METHOD'), 'route_not_found');
    assert.equal(codeOf('ERR_HTTP_REQUEST_TIMEOUT'), 'request_timeout');
    assert.equal(codeOf('HPE_INVALID_HEADER_TOKEN'), 'malformed_request');
  });

  it('makes an undecodable path literal and leaves every decodable URL alone', () => {
    assert.equal(literalizeUndecodablePath('/v1/%ff%fe'), '/v1/%25ff%25fe');
    assert.equal(literalizeUndecodablePath('/v1/sessions/%zz?x=%ff'), '/v1/sessions/%25zz?x=%ff');
    for (const url of ['/healthz', '/v1/sessions/a%20b', '/v1/events?lastEventId=%ff', '/v1/%C3%A9']) assert.equal(literalizeUndecodablePath(url), url);
  });
});
