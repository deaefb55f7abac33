import { describe, expect, it } from 'vitest';
import { forwardedBody, forwardOpenAIBody, type RawAnswer } from './raw.js';
import { MAX_REPORTED_TOKENS } from '../core/reported-usage.js';
import { floatsToBase64 } from './vectors.js';

const b64 = floatsToBase64([0.5, -0.25]);
const NOTHING = Buffer.alloc(0);
/** The forwarded body with no usage member added: only the model name changes. */
const bodyOf = (a: RawAnswer | undefined): Buffer => forwardedBody(a!, NOTHING);

function openaiBody(model: string, embedding: string): Buffer {
  return Buffer.from(
    `{\n  "object": "list",\n  "data": [\n    {\n      "object": "embedding",\n      "index": 0,\n      "embedding": ${embedding}\n    }\n  ],\n  "model": "${model}",\n  "usage": {\n    "prompt_tokens": 8,\n    "total_tokens": 8\n  }\n}\n`,
  );
}

describe('forwardOpenAIBody', () => {
  it('forwards the very same bytes and reads usage', () => {
    const raw = openaiBody('text-embedding-3-small', `"${b64}"`);
    const out = forwardOpenAIBody(raw, 'text-embedding-3-small', 'base64', 1)!;
    expect(out.raw).toBe(raw);
    expect(out.model).toBeUndefined();
    expect(out.promptTokens).toBe(8);
    expect(bodyOf(out).equals(raw)).toBe(true);
  });

  it('replaces a different model name and keeps the rest byte for byte', () => {
    const raw = openaiBody('my-azure-deployment', '[0.5,-0.25]');
    const out = forwardOpenAIBody(raw, 'text-embedding-3-small', 'float', 1)!;
    const parsed = JSON.parse(bodyOf(out).toString());
    expect(parsed.model).toBe('text-embedding-3-small');
    expect(parsed.data[0].embedding).toEqual([0.5, -0.25]);
    expect(bodyOf(out).toString().replace('text-embedding-3-small', 'my-azure-deployment')).toBe(raw.toString());
  });

  it('handles servers that write model first, or none at all', () => {
    const first = Buffer.from(`{"created":1,"object":"list","model":"other","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"usage":{"prompt_tokens":3,"total_tokens":3}}`);
    expect(JSON.parse(bodyOf(forwardOpenAIBody(first, 'pub', 'base64', 1)).toString()).model).toBe('pub');
    const none = Buffer.from(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"usage":{"prompt_tokens":3,"total_tokens":3}}`);
    const fixed = JSON.parse(bodyOf(forwardOpenAIBody(none, 'pub', 'base64', 1)).toString());
    expect(fixed.model).toBe('pub');
    expect(fixed.usage.prompt_tokens).toBe(3);
  });

  it('declines (so the caller parses) when usage is missing or the vectors are in the other form', () => {
    const noUsage = Buffer.from(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"model":"m"}`);
    expect(forwardOpenAIBody(noUsage, 'm', 'base64', 1)).toBeUndefined();
    expect(forwardOpenAIBody(openaiBody('m', '[0.5]'), 'm', 'base64', 1)).toBeUndefined();
    expect(forwardOpenAIBody(openaiBody('m', `"${b64}"`), 'm', 'float', 1)).toBeUndefined();
    expect(forwardOpenAIBody(Buffer.from('{"usage": {"prompt_tokens": 1'), 'm', 'float', 1)).toBeUndefined();
  });

  it('forwards several vectors only when there is one per input, none empty, base64 ones of one length', () => {
    const body = (vectors: string[]) =>
      Buffer.from(`{"object":"list","data":[${vectors.map((v, i) => `{"object":"embedding","index":${i},"embedding": ${v}}`).join(',')}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`);
    const q = (v: string) => `"${v}"`;
    expect(forwardOpenAIBody(body([q(b64), q(b64), q(b64)]), 'm', 'base64', 3)).toBeDefined();
    expect(forwardOpenAIBody(body(['[0.5,1]', '[ 0.5, 1 ]']), 'm', 'float', 2)).toBeDefined();
    expect(forwardOpenAIBody(body([q(b64), q(b64)]), 'm', 'base64', 3)).toBeUndefined();
    expect(forwardOpenAIBody(body([q(b64), q(b64)]), 'm', 'base64', 1)).toBeUndefined(); // two items for one input
    expect(forwardOpenAIBody(body([q(b64), q(b64), q(b64)]), 'm', 'base64', 2)).toBeUndefined();
    expect(forwardOpenAIBody(body([q(b64), q(floatsToBase64([1]))]), 'm', 'base64', 2)).toBeUndefined();
    expect(forwardOpenAIBody(body([q(b64), '""']), 'm', 'base64', 2)).toBeUndefined();
    expect(forwardOpenAIBody(body(['[0.5]', '[ ]']), 'm', 'float', 2)).toBeUndefined();
    expect(forwardOpenAIBody(body(['[]']), 'm', 'float', 1)).toBeUndefined();
  });

  it('forwards several float vectors only when they hold as many elements each', () => {
    const body = (vectors: string[]) =>
      Buffer.from(`{"object":"list","data":[${vectors.map((v, i) => `{"object":"embedding","index":${i},"embedding": ${v}}`).join(',')}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`);
    const floats = (n: number) => `[${Array.from({ length: n }, (_, i) => (i % 3 === 0 ? -0.0123 : 0.5e-3) * (i + 1)).join(', ')}]`;
    expect(forwardOpenAIBody(body([floats(1536), floats(1536), floats(1536)]), 'm', 'float', 3)).toBeDefined();
    expect(forwardOpenAIBody(body(['[1,2,3]', '[ 1 , 2 , 3 ]', '[\n1,\n2,\n3\n]']), 'm', 'float', 3)).toBeDefined();
    // Input 0 has 1,536 floats, input 1 three: no index could hold both.
    expect(forwardOpenAIBody(body([floats(1536), floats(3)]), 'm', 'float', 2)).toBeUndefined();
    expect(forwardOpenAIBody(body([floats(3), floats(3), floats(4)]), 'm', 'float', 3)).toBeUndefined();
    expect(forwardOpenAIBody(body(['[0.5]', '[0.5, 1]']), 'm', 'float', 2)).toBeUndefined();
    // Not numbers at all: nested arrays or strings are left to the full parse.
    expect(forwardOpenAIBody(body(['[[0.5, 1]]', '[[0.5, 1]]']), 'm', 'float', 2)).toBeUndefined();
    expect(forwardOpenAIBody(body(['["a"]']), 'm', 'float', 1)).toBeUndefined();
  });

  it('puts the usage member first in usage and the public model in place, in one body, wherever model sits', () => {
    const cost = Buffer.from('"cost":0.00002,');
    const data = `"data":[{"object":"embedding","index":0,"embedding":"${b64}"}]`;
    const usage = '"usage":{"prompt_tokens":3,"total_tokens":3}';
    const withCost = '"usage":{"cost":0.00002,"prompt_tokens":3,"total_tokens":3}';
    const cases: [string, string][] = [
      // model before usage (OpenAI's order), different from the public name
      [`{"object":"list",${data},"model":"deploy-1",${usage}}`, `{"object":"list",${data},"model":"pub",${withCost}}`],
      // model after usage
      [`{"object":"list",${data},${usage},"model":"deploy-1"}`, `{"object":"list",${data},${withCost},"model":"pub"}`],
      // model first, already the public name
      [`{"model":"pub","object":"list",${data},${usage}}`, `{"model":"pub","object":"list",${data},${withCost}}`],
      // no model at all
      [` {"object":"list",${data},${usage}}`, ` {"model":"pub","object":"list",${data},${withCost}}`],
    ];
    for (const [upstream, expected] of cases) {
      const out = forwardOpenAIBody(Buffer.from(upstream), 'pub', 'base64', 1);
      expect(out?.promptTokens).toBe(3);
      expect(forwardedBody(out!, cost).toString()).toBe(expected);
    }
  });

  describe('vouches for indexes', () => {
    const item = (members: string) => `{"object":"embedding",${members}}`;
    const body = (items: string[]) => Buffer.from(`{"object":"list","data":[${items.join(',')}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`);
    const v = `"embedding":"${b64}"`;
    const vouched = (items: string[], inputs = items.length) => forwardOpenAIBody(body(items), 'm', 'base64', inputs) !== undefined;

    it('only as each item at its own position, 0..n-1, as OpenAI writes them', () => {
      expect(vouched([item(`"index":0,${v}`), item(`"index":1,${v}`), item(`"index":2,${v}`)])).toBe(true);
      // The index after the vector (Ollama, text-embeddings-inference) and spaces around it.
      expect(vouched([item(`${v},"index":0`), item(`${v} , "index" : 1 `)])).toBe(true);
      expect(vouched([item(`"index":1,${v}`)])).toBe(false);
      expect(vouched([item(`"index":0,${v}`), item(`"index":0,${v}`), item(`"index":0,${v}`)])).toBe(false);
      // Out of order, each once: right, but the client gets them in input order from the full parse.
      expect(vouched([item(`"index":1,${v}`), item(`"index":0,${v}`)])).toBe(false);
      expect(vouched([item(`"index":0,${v}`), item(`"index":2,${v}`), item(`"index":1,${v}`)])).toBe(false);
    });

    it('not when an index is missing, repeated in its item, or no plain integer', () => {
      expect(vouched([item(v)])).toBe(false);
      expect(vouched([item(`"index":0,${v}`), item(v)])).toBe(false);
      expect(vouched([item(`"index":0,"index":0,${v}`)])).toBe(false);
      for (const index of ['"0"', '0.0', '0e0', '-0', '00', 'null', '1e400'])
        expect(vouched([item(`"index":${index},${v}`)]), index).toBe(false);
      // An item with two vectors, or none; a vector outside any item of data.
      expect(vouched([item(`"index":0,${v},${v}`)])).toBe(false);
      expect(vouched([item(`"index":0`), item(`"index":1,${v}`)], 2)).toBe(false);
      const outside = `{"object":"list","x":{"index":0,${v}},"data":[],"usage":{"prompt_tokens":3,"total_tokens":3}}`;
      expect(forwardOpenAIBody(Buffer.from(outside), 'm', 'base64', 1)).toBeUndefined();
    });

    it('not when the body holds more than the client would read the same way', () => {
      const good = body([item(`"index":0,${v}`)]).toString();
      expect(forwardOpenAIBody(Buffer.from(good), 'm', 'base64', 1)).toBeDefined();
      // A second data (the client's parser keeps the last), a backslash anywhere, bytes after the object.
      expect(forwardOpenAIBody(Buffer.from(good.replace('"model"', '"data":[],"model"')), 'm', 'base64', 1)).toBeUndefined();
      expect(forwardOpenAIBody(Buffer.from(good.replace('"list"', '"l\\u0069st"')), 'm', 'base64', 1)).toBeUndefined();
      expect(forwardOpenAIBody(Buffer.from(`${good} x`), 'm', 'base64', 1)).toBeUndefined();
      expect(forwardOpenAIBody(Buffer.from(`${good}\n`), 'm', 'base64', 1)).toBeDefined();
      // `object` is the spec's word and nothing else (whatever else it held would be forwarded unredacted).
      expect(forwardOpenAIBody(Buffer.from(good.replace('"list"', '[[[]],{"a":[true,null,-1.5e3]}]')), 'm', 'base64', 1)).toBeUndefined();
      expect(forwardOpenAIBody(Buffer.from(good.replace('"list"', 'nul')), 'm', 'base64', 1)).toBeUndefined();
      expect(forwardOpenAIBody(Buffer.from(good.replace('"list"', `${'['.repeat(40)}${']'.repeat(40)}`)), 'm', 'base64', 1)).toBeUndefined();
    });
  });

  it('vouches for base64 vectors only as whole float32 values, padded, of one size', () => {
    const body = (vectors: string[]) =>
      Buffer.from(`{"object":"list","data":[${vectors.map((e, i) => `{"object":"embedding","index":${i},"embedding":"${e}"}`).join(',')}],"usage":{"prompt_tokens":3,"total_tokens":3}}`);
    const vouched = (...vectors: string[]) => forwardOpenAIBody(body(vectors), 'm', 'base64', vectors.length) !== undefined;
    // 1, 2 and 3 floats: padded with `==`, `=` and nothing.
    for (const n of [1, 2, 3]) {
      const e = floatsToBase64(new Array(n).fill(0.5));
      expect(e.length % 4).toBe(0);
      expect(vouched(e), e).toBe(true);
      expect(vouched(e, e), e).toBe(true);
      // Without its padding a strict decoder refuses it: the full parse hands it out padded.
      if (e.endsWith('=')) expect(vouched(e.replace(/=+$/, '')), e).toBe(false);
    }
    // 15 bytes, unpadded and padded; 7 bytes beside 8 of the same length; three `=`; nothing.
    expect(vouched('zczMPc3MTD6amZk+zczMP')).toBe(false);
    expect(vouched('zczMPc3MTD6amZk+zczM')).toBe(false);
    expect(vouched('zczMPc3MTD6amZk+zczM', 'zczMPc3MTD6amZk+zczM')).toBe(false);
    expect(vouched('AAAAAAAAgD8=', 'AAAAAAAAgD==')).toBe(false);
    expect(vouched('AAAAAAAA====')).toBe(false);
    expect(vouched('')).toBe(false);
    expect(vouched(floatsToBase64([1, 2]), floatsToBase64([1, 2, 3]))).toBe(false);
  });

  it('vouches for usage only as whole counts within the bound, the total the same, without a cost of its own', () => {
    const body = (usage: string) => Buffer.from(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"usage":${usage}}`);
    const tokens = (usage: string) => forwardOpenAIBody(body(usage), 'm', 'base64', 1)?.promptTokens;
    expect(tokens('{"prompt_tokens":3,"total_tokens":3}')).toBe(3);
    expect(tokens('{ "total_tokens" : 0 , "prompt_tokens" : 0 }')).toBe(0);
    // Any other member is parsed in full (its name would be forwarded unredacted), a number or an object.
    expect(tokens('{ "total_tokens" : 0 , "prompt_tokens" : 0 , "details" : 1.5 }')).toBeUndefined();
    expect(tokens('{ "total_tokens" : 0 , "prompt_tokens" : 0 , "details" : {"prompt_tokens": 1.5} }')).toBeUndefined();
    expect(tokens(`{"prompt_tokens":${MAX_REPORTED_TOKENS},"total_tokens":${MAX_REPORTED_TOKENS}}`)).toBe(MAX_REPORTED_TOKENS);
    for (const usage of [
      '{"prompt_tokens":2.5,"total_tokens":2.5}',
      '{"prompt_tokens":3.0,"total_tokens":3}',
      '{"prompt_tokens":3e0,"total_tokens":3}',
      '{"prompt_tokens":-1,"total_tokens":-1}',
      `{"prompt_tokens":${MAX_REPORTED_TOKENS + 1},"total_tokens":${MAX_REPORTED_TOKENS + 1}}`,
      '{"prompt_tokens":1e17,"total_tokens":1e17}',
      '{"prompt_tokens":"3","total_tokens":3}',
      '{"prompt_tokens":3,"total_tokens":4}',
      '{"prompt_tokens":3}',
      '{"total_tokens":3}',
      '{"prompt_tokens":3,"total_tokens":3,"prompt_tokens":5}',
      '{"prompt_tokens":3,"total_tokens":3,"cost":0.5}',
    ])
      expect(tokens(usage), usage).toBeUndefined();
    // Two usage objects: the client's parser keeps the last, the bill would read the first.
    const twice = Buffer.from(body('{"prompt_tokens":3,"total_tokens":3}').toString().replace(/}$/, ',"usage":{"prompt_tokens":9,"total_tokens":9}}'));
    expect(forwardOpenAIBody(twice, 'm', 'base64', 1)).toBeUndefined();
  });

  it('forwards no string of the upstream but the vectors: echoed text is parsed in full, which drops it', () => {
    const v = '[0.5,-0.25]';
    const good = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":${v}}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`;
    const forwarded = (text: string) => forwardOpenAIBody(Buffer.from(text), 'm', 'float', 1) !== undefined;
    expect(forwarded(good)).toBe(true);
    // `created` may stay as a number (or null); text, objects and arrays may not, at any level.
    expect(forwarded(good.replace('"model"', '"created":17,"model"'))).toBe(true);
    expect(forwarded(good.replace('"model"', '"created":null,"model"'))).toBe(true);
    expect(forwarded(good.replace('"model"', '"created":"17","model"'))).toBe(false);
    expect(forwarded(good.replace('"model"', '"debug":"Bearer sk-SECRET0123456789","model"'))).toBe(false);
    expect(forwarded(good.replace('"model"', '"meta":{"k":1},"model"'))).toBe(false);
    expect(forwarded(good.replace('"model"', '"list":[1],"model"'))).toBe(false);
    expect(forwarded(good.replace('"index":0', '"index":0,"echo":"Bearer sk-SECRET0123456789"'))).toBe(false);
    expect(forwarded(good.replace('"total_tokens":3', '"total_tokens":3,"note":"sk-SECRET0123456789"'))).toBe(false);
    expect(forwarded(good.replace('"object":"list"', '"object":"sk-SECRET0123456789"'))).toBe(false);
    expect(forwarded(good.replace('"object":"embedding"', '"object":"Bearer sk-SECRET"'))).toBe(false);
    // A string among a vector's numbers.
    expect(forwarded(good.replace(v, '[0.5,"Bearer sk-SECRET0123456789"]'))).toBe(false);
    expect(forwarded(good.replace(v, '[0.5,{"k":"sk-SECRET0123456789"}]'))).toBe(false);
  });
});
