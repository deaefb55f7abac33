import { describe, expect, it } from 'vitest';
import { costUnits } from '../../src/billing/usage-cost.js';
import { renderEmbeddings } from '../../src/embeddings/render.js';
import type { EmbeddingRequest, Vector } from '../../src/embeddings/types.js';
import { floatsToBase64 } from '../../src/embeddings/vectors.js';

const request = (encodingFormat: 'float' | 'base64'): EmbeddingRequest => ({ model: 'emb-"quoted"', inputs: [], encodingFormat, extra: {} });
const bytes = (body: Buffer | Buffer[]) => (Array.isArray(body) ? Buffer.concat(body) : body);
const vectorsOf = (count: number, size: number): number[][] =>
  Array.from({ length: count }, (_, i) => Array.from({ length: size }, (_, k) => ((i * 31 + k) % 97) / 97 - 0.5));

/** base64 carries float32 values: a client asking floats of a base64 vector gets them at float32 precision. */
const expectedVector = (floats: number[], given: Vector, format: 'float' | 'base64') =>
  format === 'base64' ? floatsToBase64(floats) : typeof given === 'string' ? Array.from(new Float32Array(floats)) : floats;

describe('renderEmbeddings', () => {
  it('writes the bytes JSON.stringify would, in one piece or in many, for either encoding', async () => {
    for (const [count, size] of [[1, 8], [3, 5], [200, 300], [40, 3072]] as const) {
      const floats = vectorsOf(count, size);
      for (const format of ['float', 'base64'] as const) {
        // Vectors as the vendors give them: float arrays, or base64 strings.
        for (const given of [floats, floats.map((v) => floatsToBase64(v))] as Vector[][]) {
          const body = await renderEmbeddings(request(format), { vectors: given, promptTokens: 42 }, 1_234);
          const expected = JSON.stringify({
            object: 'list',
            data: given.map((v, i) => ({ object: 'embedding', index: i, embedding: expectedVector(floats[i]!, v, format) })),
            model: 'emb-"quoted"',
            usage: { prompt_tokens: 42, total_tokens: 42, cost: costUnits(1_234) },
          });
          expect(bytes(body).toString(), `${count}x${size} ${format} ${typeof given[0]}`).toBe(expected);
        }
      }
    }
  });

  it('builds a large answer over many turns of the event loop, and leaves it in pieces', async () => {
    let turns = 0;
    let counting = true;
    const tick = () => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const body = await renderEmbeddings(request('float'), { vectors: vectorsOf(256, 3072), promptTokens: 1 }, 0);
    counting = false;
    // 786,432 values: 24 turns' worth at 32,768 values a turn; other work runs between them.
    expect(turns).toBeGreaterThanOrEqual(20);
    expect(Array.isArray(body)).toBe(true);
    expect((body as Buffer[]).length).toBeGreaterThanOrEqual(24);
  });
});
