import { describe, expect, it } from 'vitest';
import { MAX_VECTOR_DIMENSIONS } from './answer-bounds.js';
import { forwardedBody, forwardOpenAIBody } from './raw.js';
import { floatsToBase64 } from './vectors.js';

/**
 * What the fast path forwards reaches the client byte for byte, unredacted: it may vouch only for an
 * answer the full parse would hand out the same, with no name or value of the upstream's own choosing.
 * Everything else is left to the full parse (undefined here), which drops what it does not know and
 * refuses (502, no charge) what it cannot hand out.
 */
const SECRET = 'sk-upstreamSECRET0123456789abcdef';
const body = (vectors: string[], extra = { top: '', item: '', usage: '' }) =>
  Buffer.from(
    `{"object":"list",${extra.top}"data":[${vectors.map((v, i) => `{"object":"embedding","index":${i},${extra.item}"embedding":${v}}`).join(',')}],` +
      `"model":"m","usage":{"prompt_tokens":3,${extra.usage}"total_tokens":3}}`,
  );
const vouched = (vectors: string[], format: 'float' | 'base64' = 'float') => forwardOpenAIBody(body(vectors), 'm', format, vectors.length) !== undefined;

describe('the fast path vouches only for names the spec knows', () => {
  const withExtra = (where: 'top' | 'item' | 'usage', member: string) =>
    forwardOpenAIBody(body(['[0.5,-0.25]'], { top: '', item: '', usage: '', [where]: `${member},` }), 'm', 'float', 1);

  it('forwards OpenAI\'s own answer, and a numeric `created`', () => {
    const out = forwardOpenAIBody(body(['[0.5,-0.25]']), 'm', 'float', 1)!;
    expect(forwardedBody(out, Buffer.alloc(0)).equals(body(['[0.5,-0.25]']))).toBe(true);
    expect(withExtra('top', '"created":1700000000')).toBeDefined();
  });

  it('leaves a member of any other name to the full parse, whatever its value, at every level', () => {
    for (const where of ['top', 'item', 'usage'] as const)
      for (const value of ['1', 'null', 'true', '0.5', '"x"', '{}', '[]']) {
        expect(withExtra(where, `"${SECRET}":${value}`), `${where}: ${value}`).toBeUndefined();
        expect(withExtra(where, `"ok":${value}`), `${where}: ok ${value}`).toBeUndefined();
      }
    // The spec's names where they do not belong.
    expect(withExtra('item', '"created":1')).toBeUndefined();
    expect(withExtra('usage', '"index":1')).toBeUndefined();
    expect(withExtra('top', '"prompt_tokens":1')).toBeUndefined();
  });
});

describe('the fast path vouches for float vectors only as the full parse would hand them out', () => {
  it('takes JSON numbers of every form, with JSON whitespace', () => {
    for (const v of ['[0.5,-0.25]', '[0]', '[-0]', '[1e-999]', '[ 1 , -0.5E+3 , 2e-5 , 12345678901234567890 ]', '[\n\t1,\r\n2\n]', '[9.99e37,-1e37,123e35]'])
      expect(vouched([v]), v).toBe(true);
  });

  it('not what is no JSON number, or no JSON at all', () => {
    for (const v of [
      '[1,null,true,{},-,Infinity,NaN]',
      '[Infinity]',
      '[NaN]',
      '[-]',
      '[1,,2]',
      '[1,]',
      '[,1]',
      '[.5]',
      '[1.]',
      '[01]',
      '[-01]',
      '[1e]',
      '[1e+]',
      '[+1]',
      '[--1]',
      '[1.2.3]',
      '[1e5e5]',
      '[1e5.3]',
      '[1 2]',
      '[0x10]',
      '[1,"2"]',
      '[[1]]',
      '[1',
      '[1}',
      '[1\u00a0]',
      '[1\u000b]',
    ])
      expect(vouched([v]), v).toBe(false);
  });

  it('not a value that may reach 1e38: the full parse decides (it refuses 1e999 and 1e39, serves 1e38)', () => {
    for (const v of ['[1e999,0.5]', '[-1e999]', '[1e39]', '[3.5e38]', '[1e38]', '[0.1e39]', `[${'9'.repeat(39)}]`, '[1e99999999999999999999]'])
      expect(vouched([v]), v).toBe(false);
  });

  it(`not more than ${MAX_VECTOR_DIMENSIONS} values, nor vectors of different sizes`, () => {
    const floats = (n: number) => `[${new Array(n).fill('0.5').join(',')}]`;
    expect(vouched([floats(MAX_VECTOR_DIMENSIONS)])).toBe(true);
    expect(vouched([floats(MAX_VECTOR_DIMENSIONS + 1)])).toBe(false);
    expect(vouched([floats(20_000)])).toBe(false);
    expect(vouched([floats(3), floats(3)])).toBe(true);
    expect(vouched([floats(3), floats(4)])).toBe(false);
  });
});

describe('the fast path vouches for base64 vectors only as canonical float32 data', () => {
  const q = (s: string) => `"${s}"`;
  const sound = floatsToBase64([0.5, -0.25, 3]);

  it('takes the standard alphabet, padded', () => {
    expect(vouched([q(sound)], 'base64')).toBe(true);
    expect(vouched([q(floatsToBase64([1e-40, 3.4e38, -0]))], 'base64')).toBe(true);
  });

  it('not text outside the alphabet, even of a length that decodes to whole floats', () => {
    // 16 characters: Node's lenient decoder reads `-` as URL-safe base64 and 12 bytes come out.
    expect(vouched([q('sk-upstreamSECRE')], 'base64')).toBe(false);
    for (const bad of [sound.replace(/^./, '-'), sound.replace(/^./, '_'), sound.replace(/^(.{4})/, '$1 '), sound.replace(/^./, '=')])
      expect(vouched([q(bad)], 'base64'), bad).toBe(false);
  });

  it('not any byte outside the alphabet, wherever it stands (Node\'s decoder passes over them, or reads `-` and `_`)', () => {
    const alphabet = new Set(Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'));
    const text = Buffer.from(floatsToBase64([0.5, -0.25, 3, 7, 0.125]));
    expect(text.at(-1)).toBe(0x3d);
    const [head, tail] = body(['"@"']).toString().split('@') as [string, string];
    for (let byte = 0; byte < 256; byte++) {
      if (alphabet.has(byte)) continue;
      for (const at of [0, 1, 13, text.length - 2]) {
        const vector = Buffer.from(text);
        vector[at] = byte;
        const answer = Buffer.concat([Buffer.from(head), vector, Buffer.from(tail)]);
        expect(forwardOpenAIBody(answer, 'm', 'base64', 1), `byte ${byte} at ${at}`).toBeUndefined();
      }
    }
  });

  it('not Infinity or NaN, which the full parse refuses', () => {
    for (const v of [Infinity, -Infinity, NaN])
      for (const at of [0, 1, 2, 3, 4]) {
        const values = [0.5, 0.5, 0.5, 0.5, 0.5];
        values[at] = v;
        expect(vouched([q(floatsToBase64(values))], 'base64'), `${v} at ${at}`).toBe(false);
      }
  });

  it(`not more than ${MAX_VECTOR_DIMENSIONS} values`, () => {
    expect(vouched([q(floatsToBase64(new Array(MAX_VECTOR_DIMENSIONS).fill(0.5)))], 'base64')).toBe(true);
    expect(vouched([q(floatsToBase64(new Array(MAX_VECTOR_DIMENSIONS + 1).fill(0.5)))], 'base64')).toBe(false);
  });
});
