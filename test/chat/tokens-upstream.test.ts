import { describe, expect, it } from 'vitest';
import { countText, estimatePromptTokens, IMAGE_PART_TOKENS, reservedCompletionTokens } from '../../src/chat/tokens.js';
import { admittedOutputTokens } from '../../src/chat/output-hold.js';
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
    expect(parts).toBe(one + IMAGE_PART_TOKENS);
    const withTools = await estimatePromptTokens({ messages: [{ role: 'user', content: 'hello there' }], tools: [{ type: 'function', function: { name: 'get_weather' } }] });
    expect(withTools).toBeGreaterThan(one);
  });

  it('count every top-level member a vendor may read as prompt (response_format, tool_choice, ...), not the model or sampling settings', async () => {
    const messages = [{ role: 'user', content: 'hello there' }];
    const one = await estimatePromptTokens({ messages });
    const schema = { type: 'object', properties: { answer: { type: 'string', description: 'the answer in one sentence' } } };
    const format = { type: 'json_schema', json_schema: { name: 'reply', schema } };
    expect(await estimatePromptTokens({ messages, response_format: format })).toBe(one + countText(JSON.stringify(format)));
    expect(await estimatePromptTokens({ messages, tool_choice: { type: 'function', function: { name: 'get_weather' } } })).toBeGreaterThan(one);
    expect(await estimatePromptTokens({ messages, documents: [{ title: 'a', text: 'b' }] })).toBeGreaterThan(one);
    const settings = { model: 'gpt-4o', temperature: 0.2, max_tokens: 5, stream: true, stream_options: { include_usage: true }, user: 'u-1', metadata: { a: 'b' }, stop: ['x'], logit_bias: { '50256': -100 }, tools: [] };
    expect(await estimatePromptTokens({ messages, ...settings })).toBe(one);
  });

  it('treat special-token text in a prompt as plain text', async () => {
    await expect(estimatePromptTokens({ messages: [{ role: 'user', content: 'say <|endoftext|> now' }] })).resolves.toBeGreaterThan(0);
    expect(countText('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('reserve max_completion_tokens (or max_tokens) for each choice', () => {
    const none = { fallback: 4096 };
    expect(reservedCompletionTokens({ max_tokens: 100 }, none)).toEqual({ tokens: 100, defaulted: false, billable: 100 });
    expect(reservedCompletionTokens({ max_completion_tokens: 50, max_tokens: 100 }, none)).toEqual({ tokens: 50, defaulted: false, billable: 50 });
    expect(reservedCompletionTokens({ max_tokens: 100, n: 3 }, none)).toEqual({ tokens: 300, defaulted: false, billable: 300 });
  });

  it('without a cap reserve the model\'s output limit, else the configured allowance, for each choice', () => {
    expect(reservedCompletionTokens({}, { fallback: 4096 })).toEqual({ tokens: 4096, defaulted: true, billable: 131_072 });
    expect(reservedCompletionTokens({ n: 2 }, { fallback: 4096 })).toEqual({ tokens: 8192, defaulted: true, billable: 262_144 });
    expect(reservedCompletionTokens({ max_tokens: null }, { modelMax: 16_384, fallback: 4096 })).toEqual({ tokens: 16_384, defaulted: true, billable: 16_384 });
    expect(reservedCompletionTokens({}, { fallback: 0 })).toEqual({ tokens: 0, defaulted: true, billable: 131_072 });
  });

  it('hold a cap above the model\'s own limit only up to that limit (it cannot produce more)', () => {
    expect(reservedCompletionTokens({ max_tokens: 1_000_000, n: 2 }, { modelMax: 16_384, fallback: 4096 })).toEqual({ tokens: 32_768, defaulted: false, billable: 32_768 });
    expect(reservedCompletionTokens({ max_tokens: 100 }, { modelMax: 16_384, fallback: 4096 })).toEqual({ tokens: 100, defaulted: false, billable: 100 });
    // Unknown limit: the client's cap is held as asked.
    expect(reservedCompletionTokens({ max_tokens: 1_000_000 }, { fallback: 4096 })).toEqual({ tokens: 1_000_000, defaulted: false, billable: 1_000_000 });
  });

  it('count an uncapped request\'s allowance against TPM up to half the tightest quota, less the prompt', () => {
    const scopes = (keyTpm: number, accountTpm: number) => [
      { id: 'key:k', quota: { rpm: 10, tpm: keyTpm } },
      { id: 'account:a', quota: { rpm: 10, tpm: accountTpm } },
    ];
    const uncapped = { tokens: 4096, defaulted: true, billable: 131_072 };
    expect(admittedOutputTokens(uncapped, 10, scopes(0, 200_000))).toBe(4096);
    expect(admittedOutputTokens(uncapped, 10, scopes(1001, 200_000))).toBe(490);
    expect(admittedOutputTokens(uncapped, 10, scopes(0, 0))).toBe(4096);
    expect(admittedOutputTokens(uncapped, 600, scopes(1000, 0))).toBe(0);
    // The client's own cap counts in full (too large for the minute is then the client's 400).
    expect(admittedOutputTokens({ tokens: 4096, defaulted: false, billable: 4096 }, 10, scopes(1000, 0))).toBe(4096);
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
    // Integers to JavaScript, but past what counts can hold exactly.
    expect(() => validateChatBody({ messages: [{ role: 'user' }], n: 1e228 })).toThrow(/'n'/);
    expect(() => validateChatBody({ messages: [{ role: 'user' }], max_tokens: 2 ** 60 })).toThrow(/max_tokens/);
    expect(() => validateChatBody({ messages: [{ role: 'user' }], max_tokens: null, anything_new: true })).not.toThrow();
  });
});
