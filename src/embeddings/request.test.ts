import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../core/errors.js';
import { MAX_INPUTS, parseEmbeddingRequest } from './request.js';

function refusal(body: Record<string, unknown>): GatewayError {
  try {
    parseEmbeddingRequest(body as never);
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe('parseEmbeddingRequest', () => {
  it('normalises the accepted input forms', () => {
    expect(parseEmbeddingRequest({ model: 'm', input: 'one' }).inputs).toEqual(['one']);
    expect(parseEmbeddingRequest({ model: 'm', input: ['a', 'b'] }).inputs).toEqual(['a', 'b']);
    expect(parseEmbeddingRequest({ model: 'm', input: [1, 2, 3] }).inputs).toEqual([[1, 2, 3]]);
    expect(parseEmbeddingRequest({ model: 'm', input: [[1], [2, 3]] }).inputs).toEqual([[1], [2, 3]]);
    const r = parseEmbeddingRequest({ model: 'm', input: 'x' });
    expect(r.encodingFormat).toBe('float');
    expect(r.extra).toEqual({});
  });

  it('reads every standard field', () => {
    const r = parseEmbeddingRequest({
      model: 'm',
      input: 'x',
      encoding_format: 'base64',
      dimensions: 64,
      user: 'u',
      task_type: 'RETRIEVAL_QUERY',
      title: 't',
      input_type: 'image',
    });
    expect(r).toMatchObject({ encodingFormat: 'base64', dimensions: 64, user: 'u', taskType: 'RETRIEVAL_QUERY', title: 't', inputType: 'image' });
  });

  it('treats unknown top-level fields as extra_body, the literal extra_body winning', () => {
    const r = parseEmbeddingRequest({ model: 'm', input: 'x', a: 1, b: 2, extra_body: { b: 3, c: { d: 4 } } });
    expect(r.extra).toEqual({ a: 1, b: 3, c: { d: 4 } });
  });

  it.each([
    [{ input: 'x' }, 'model'],
    [{ model: 'm' }, 'input'],
    [{ model: 'm', input: '' }, 'input'],
    [{ model: 'm', input: [] }, 'input'],
    [{ model: 'm', input: ['ok', ''] }, 'input'],
    [{ model: 'm', input: ['ok', 3] }, 'input'],
    [{ model: 'm', input: ['ok', ['x']] }, 'input'],
    [{ model: 'm', input: [[1], 'x'] }, 'input'],
    [{ model: 'm', input: [[]] }, 'input'],
    [{ model: 'm', input: [1.5] }, 'input'],
    [{ model: 'm', input: [-1] }, 'input'],
    [{ model: 'm', input: 42 }, 'input'],
    [{ model: 'm', input: { text: 'x' } }, 'input'],
    [{ model: 'm', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
    [{ model: 'm', input: 'x', dimensions: 0 }, 'dimensions'],
    [{ model: 'm', input: 'x', dimensions: 1.5 }, 'dimensions'],
    [{ model: 'm', input: 'x', dimensions: '256' }, 'dimensions'],
    [{ model: 'm', input: 'x', user: 7 }, 'user'],
    [{ model: 'm', input: 'x', task_type: 1 }, 'task_type'],
    [{ model: 'm', input: 'x', input_type: 'pdf' }, 'input_type'],
    [{ model: 'm', input: 'x', extra_body: [1] }, 'extra_body'],
    [{ model: 'm', input: 'x', extra_body: JSON.parse('{"a":{"__proto__":{"x":1}}}') }, 'extra_body'],
  ])('refuses %j with a 400 naming %s', (body, param) => {
    const e = refusal(body);
    expect(e.status).toBe(400);
    expect(e.type).toBe('invalid_request_error');
    expect(e.param).toBe(param);
  });

  it('refuses a batch over the limit and accepts one at it', () => {
    const at = Array.from({ length: MAX_INPUTS }, (_, i) => `t${i}`);
    expect(parseEmbeddingRequest({ model: 'm', input: at }).inputs).toHaveLength(MAX_INPUTS);
    expect(refusal({ model: 'm', input: [...at, 'one more'] }).param).toBe('input');
  });

  it('keeps every non-empty string list as it is, in order', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 50 }), (list) => {
        expect(parseEmbeddingRequest({ model: 'm', input: list }).inputs).toEqual(list);
      }),
    );
  });
});
