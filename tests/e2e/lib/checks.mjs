// Assertions the e2e test files share: vectors equal within a tolerance, and the error body
// shape of each API dialect (OpenAI {error:{message,type,code}}, Anthropic
// {type:"error",error:{type,message}}, ollama {error}).
import assert from 'node:assert/strict';

export function assertCloseVectors(actual, expected, tol) {
  assert.equal(actual.length, expected.length, 'vector lengths differ');
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  assert.ok(worst <= tol, `vectors differ by ${worst} (> ${tol})`);
}

// Checks `body` (parsed JSON) against the error shape of `dialect` and returns the message.
export function assertErrorShape(dialect, body, status, context = '') {
  const where = context ? ` (${context})` : '';
  assert.ok(body && typeof body === 'object', `error body is not JSON${where}`);
  switch (dialect) {
    case 'openai': {
      assert.ok(body.error && typeof body.error === 'object', `no error object${where}: ${JSON.stringify(body)}`);
      assert.equal(typeof body.error.message, 'string', `error.message${where}`);
      assert.ok(body.error.message.length > 0, `empty error.message${where}`);
      assert.equal(typeof body.error.type, 'string', `error.type${where}`);
      assert.ok('code' in body.error, `error.code missing${where}`);
      const types = { 400: 'invalid_request_error', 401: 'authentication_error', 404: 'not_found_error' };
      if (types[status]) assert.equal(body.error.type, types[status], `OpenAI error type for ${status}${where}`);
      return body.error.message;
    }
    case 'anthropic': {
      assert.equal(body.type, 'error', `type must be "error"${where}: ${JSON.stringify(body)}`);
      assert.equal(typeof body.error?.type, 'string', `error.type${where}`);
      assert.equal(typeof body.error?.message, 'string', `error.message${where}`);
      assert.ok(body.error.message.length > 0, `empty error.message${where}`);
      const types = {
        400: 'invalid_request_error',
        401: 'authentication_error',
        403: 'permission_error',
        404: 'not_found_error',
        413: 'request_too_large',
        429: 'rate_limit_error',
        500: 'api_error',
        503: 'overloaded_error',
      };
      if (types[status]) assert.equal(body.error.type, types[status], `Anthropic error type for ${status}${where}`);
      return body.error.message;
    }
    case 'ollama': {
      assert.equal(typeof body.error, 'string', `ollama error must be a string${where}: ${JSON.stringify(body)}`);
      assert.ok(body.error.length > 0, `empty error${where}`);
      return body.error;
    }
    default:
      throw new Error(`unknown dialect ${dialect}`);
  }
}
