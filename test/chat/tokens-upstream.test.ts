import { describe, expect, it } from 'vitest';
import { countText, estimatePromptTokens, reservedCompletionTokens } from '../../src/chat/tokens.js';
import { buildChatRequest, chatUrl, classifyChatError } from '../../src/chat/upstream.js';
import { validateChatBody } from '../../src/chat/validate.js';
import type { Upstream } from '../../src/http/types.js';

const up = (baseUrl: string, options: Upstream['options'] = {}): Upstream => ({
  name: 'oa', vendor: 'openai', baseUrl, apiKey: 'sk-up', models: ['m'], priority: 1, weight: 1, timeoutMs: 1000, options,
});

describe('token estimates', () => {
  it('count message text with the tokenizer plus the per-message framing', async () => {
    const one = await estimatePromptTokens({ messages: [{ role: 'user', content: 'hello there' }] });
    expect(one).toBe(3 + 3 + countText('user') + countText('hello there'));
    const longer = await estimatePromptTokens({ messages: [{ role: 'user', content: 'hello there '.repeat(100) }] });
    expect(longer).toBeGreaterThan(one + 150);
    const parts = await estimatePromptTokens({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }, { type: 'image_url', image_url: { url: 'x' } }] }] });
    expect(parts).toBe(one + 85);
    const withTools = await estimatePromptTokens({ messages: [{ role: 'user', content: 'hello there' }], tools: [{ type: 'function', function: { name: 'get_weather' } }] });
    expect(withTools).toBeGreaterThan(one);
  });

  it('treat special-token text in a prompt as plain text', async () => {
    await expect(estimatePromptTokens({ messages: [{ role: 'user', content: 'say <|endoftext|> now' }] })).resolves.toBeGreaterThan(0);
    expect(countText('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('reserve max_completion_tokens (or max_tokens) for each choice', () => {
    expect(reservedCompletionTokens({ max_tokens: 100 })).toBe(100);
    expect(reservedCompletionTokens({ max_completion_tokens: 50, max_tokens: 100 })).toBe(50);
    expect(reservedCompletionTokens({ max_tokens: 100, n: 3 })).toBe(300);
    expect(reservedCompletionTokens({})).toBe(0);
  });
});

describe('upstream request', () => {
  it('maps the model, asks for usage when streaming, keeps the rest, and authenticates', () => {
    const req = buildChatRequest(up('http://h', { organization: 'org-1' }), 'gpt-4o-2024-08-06', {
      model: 'gpt-4o', messages: [], stream: true, stream_options: { foo: 1 }, temperature: 0.2, vendor_new_param: { a: 1 },
    }, true);
    expect(req.url).toBe('http://h/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-up');
    expect(req.headers['openai-organization']).toBe('org-1');
    expect(req.body).toEqual({
      model: 'gpt-4o-2024-08-06', messages: [], stream: true, stream_options: { foo: 1, include_usage: true }, temperature: 0.2, vendor_new_param: { a: 1 },
    });
    expect(chatUrl(up('https://api.openai.com/v1'))).toBe('https://api.openai.com/v1/chat/completions');
  });

  it('classifies OpenAI errors for failover', () => {
    const e = (message: string, code: string | null = null, param: string | null = null) => ({ error: { message, type: 'x', code, param } });
    expect(classifyChatError(401, e('bad key'), {}).kind).toBe('auth');
    expect(classifyChatError(429, e('slow down'), { 'retry-after': '3' })).toEqual({ kind: 'retryable', status: 429, message: 'slow down', retryAfterSeconds: 3 });
    expect(classifyChatError(503, undefined, {}).kind).toBe('retryable');
    expect(classifyChatError(400, e('unsafe', 'content_policy_violation'), {}).kind).toBe('moderation');
    expect(classifyChatError(400, e('bad temp', 'invalid_value', 'temperature'), {})).toEqual({
      kind: 'client', status: 400, message: 'bad temp', code: 'invalid_value', param: 'temperature',
    });
    expect(classifyChatError(404, e('no such model', 'model_not_found'), {})).toMatchObject({ kind: 'client', status: 404 });
    expect(classifyChatError(418, undefined, {})).toMatchObject({ kind: 'client', status: 400 });
  });
});

describe('validateChatBody', () => {
  it('insists only on what the gateway itself reads', () => {
    expect(() => validateChatBody({ model: 'm' })).toThrow(/messages/);
    expect(() => validateChatBody({ messages: ['hi'] })).toThrow(/messages\[0\]/);
    expect(() => validateChatBody({ messages: [{ role: 'user' }], stream: 'yes' })).toThrow(/stream/);
    expect(() => validateChatBody({ messages: [{ role: 'user' }], max_tokens: -1 })).toThrow(/max_tokens/);
    expect(() => validateChatBody({ messages: [{ role: 'user' }], max_tokens: null, anything_new: true })).not.toThrow();
  });
});
