/**
 * The benchmark upstream's embeddings answer (children/embeddings-upstream.ts serves it; the
 * in-process measure of the fast path's scan, raw-scan-cost.ts, reads the same bytes): one
 * 1,536-float vector per input, about 20 KB of JSON as floats, 8 KB as base64, with `usage`.
 */

export const DIMS = 1536;
export const MODEL = 'text-embedding-3-small';

/** A deterministic unit vector whose values print with 8 significant digits, as compact JSON does. */
function vector(): Float32Array {
  let seed = 0x9e3779b9;
  const next = (): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const v = new Float32Array(DIMS);
  let norm = 0;
  for (let i = 0; i < DIMS; i++) {
    v[i] = next() * 2 - 1;
    norm += v[i]! * v[i]!;
  }
  norm = Math.sqrt(norm);
  for (let i = 0; i < DIMS; i++) v[i] = v[i]! / norm;
  return v;
}

const VEC = vector();
const RENDERED = {
  float: `[${Array.from(VEC, (x) => Number(x.toPrecision(8))).join(',')}]`,
  base64: `"${Buffer.from(VEC.buffer, VEC.byteOffset, VEC.byteLength).toString('base64')}"`,
};

export function embeddingsAnswer(count: number, format: 'float' | 'base64', tokens: number): string {
  const items: string[] = [];
  for (let i = 0; i < count; i++) items.push(`{"object":"embedding","index":${i},"embedding":${RENDERED[format]}}`);
  return `{"object":"list","data":[${items.join(',')}],"model":"${MODEL}","usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`;
}
