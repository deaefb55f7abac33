import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import type { EmbeddingRequest } from '../../../src/embeddings/types.js';
import { embedContentBody } from '../../../src/embeddings/vendors/vertex/embed-content.js';
import { measureLinear } from '../../helpers/linear-time.js';

/**
 * Every extra field of an embeddings request for a Gemini Embedding 2 model is merged into the
 * :embedContent body. A merge that copied the whole body per field was quadratic in their number.
 */
const request = (extra: JsonObject): EmbeddingRequest => ({ model: 'g2', inputs: ['x'], encodingFormat: 'float', extra });

function wideExtra(n: number): JsonObject {
  const extra: JsonObject = {};
  for (let i = 0; i < n; i++) extra[`k${i}`] = i;
  return extra;
}

describe('vertex :embedContent body for many extra fields', () => {
  it('takes time linear in their number', () => {
    const { linear, detail } = measureLinear(128, (n) => request(wideExtra(n)), (r) => void embedContentBody('x', r, undefined));
    expect(linear, detail).toBe(true);
    expect(Object.keys(embedContentBody('x', request(wideExtra(1000)), undefined))).toHaveLength(1 + 1000);
  });

  it('merges in the order written: a later name wins, `parameters` merges at the top level, `instances` is dropped', () => {
    const extra: JsonObject = {
      title: 'early',
      parameters: { title: 'from parameters', autoTruncate: false, content: { extra: 1 } },
      content: { note: 'top' },
      instances: [{ content: 'ignored' }],
      outputDimensionality: 64,
    };
    const before = structuredClone(extra);
    const body = embedContentBody('hello', { ...request(extra), dimensions: 128 }, true);
    expect(body).toEqual({
      content: { parts: [{ text: 'hello' }], extra: 1, note: 'top' },
      outputDimensionality: 64,
      autoTruncate: false,
      title: 'from parameters',
    });
    expect(extra).toEqual(before);
    const reversed = embedContentBody('hello', request({ parameters: { title: 'from parameters' }, title: 'late' }), undefined);
    expect(reversed.title).toBe('late');
  });
});
