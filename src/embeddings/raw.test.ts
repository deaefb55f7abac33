import { describe, expect, it } from 'vitest';
import { forwardOpenAIBody } from './raw.js';
import { floatsToBase64 } from './vectors.js';

const b64 = floatsToBase64([0.5, -0.25]);

function openaiBody(model: string, embedding: string): Buffer {
  return Buffer.from(
    `{\n  "object": "list",\n  "data": [\n    {\n      "object": "embedding",\n      "index": 0,\n      "embedding": ${embedding}\n    }\n  ],\n  "model": "${model}",\n  "usage": {\n    "prompt_tokens": 8,\n    "total_tokens": 8\n  }\n}\n`,
  );
}

describe('forwardOpenAIBody', () => {
  it('forwards the very same bytes and reads usage from the tail', () => {
    const raw = openaiBody('text-embedding-3-small', `"${b64}"`);
    const out = forwardOpenAIBody(raw, 'text-embedding-3-small', 'base64')!;
    expect(out.body).toBe(raw);
    expect(out.promptTokens).toBe(8);
  });

  it('replaces a different model name and keeps the rest byte for byte', () => {
    const raw = openaiBody('my-azure-deployment', '[0.5,-0.25]');
    const out = forwardOpenAIBody(raw, 'text-embedding-3-small', 'float')!;
    const parsed = JSON.parse(out.body.toString());
    expect(parsed.model).toBe('text-embedding-3-small');
    expect(parsed.data[0].embedding).toEqual([0.5, -0.25]);
    expect(out.body.toString().replace('text-embedding-3-small', 'my-azure-deployment')).toBe(raw.toString());
  });

  it('handles servers that write model first, or none at all', () => {
    const first = Buffer.from(`{"id":"x","object":"list","model":"other","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"usage":{"prompt_tokens":3,"total_tokens":3}}`);
    expect(JSON.parse(forwardOpenAIBody(first, 'pub', 'base64')!.body.toString()).model).toBe('pub');
    const none = Buffer.from(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"usage":{"prompt_tokens":3,"total_tokens":3}}`);
    const fixed = JSON.parse(forwardOpenAIBody(none, 'pub', 'base64')!.body.toString());
    expect(fixed.model).toBe('pub');
    expect(fixed.usage.prompt_tokens).toBe(3);
  });

  it('declines (so the caller parses) when usage is missing or the vectors are in the other form', () => {
    const noUsage = Buffer.from(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"${b64}"}],"model":"m"}`);
    expect(forwardOpenAIBody(noUsage, 'm', 'base64')).toBeUndefined();
    expect(forwardOpenAIBody(openaiBody('m', '[0.5]'), 'm', 'base64')).toBeUndefined();
    expect(forwardOpenAIBody(openaiBody('m', `"${b64}"`), 'm', 'float')).toBeUndefined();
    expect(forwardOpenAIBody(Buffer.from('{"usage": {"prompt_tokens": 1'), 'm', 'float')).toBeUndefined();
  });
});
