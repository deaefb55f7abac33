import { describe, expect, it } from 'vitest';
import { forwardedBody, forwardOpenAIBody, type RawAnswer } from './raw.js';
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
  it('forwards the very same bytes and reads usage from the tail', () => {
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
    const first = Buffer.from(`{"id":"x","object":"list","model":"other","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"usage":{"prompt_tokens":3,"total_tokens":3}}`);
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
    expect(forwardOpenAIBody(body([q(b64), q(b64)]), 'm', 'base64', 1)).toBeDefined(); // one input: its vector is looked at alone
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
});
