import { describe, expect, it } from 'vitest';
import { redact } from '../../src/core/redact.js';
import { isModeration, readErrorEnvelope, retryAfterSeconds } from '../../src/protocols/openai/errors.js';

describe('shared error helpers', () => {
  it('redacts keys in every shape they come back in', () => {
    const out = redact(
      'key sk-live-abcdef123456 auth Bearer eyJhbGciOi.x.y url https://x/y?api-key=s3cr3t&x=1 azure 0123456789abcdef0123456789abcdef',
    );
    expect(out).not.toMatch(/abcdef123456|eyJhbGciOi|s3cr3t|0123456789abcdef0123456789abcdef/);
    expect(out).toContain('x=1');
  });

  it('reads retry-after-ms, seconds, HTTP dates and duration hints', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterSeconds({ 'retry-after-ms': '1500', 'retry-after': '9' }, now)).toBe(1.5);
    expect(retryAfterSeconds({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, now)).toBe(30);
    expect(retryAfterSeconds({ 'x-ratelimit-reset-tokens': '20ms' }, now)).toBe(0.02);
    expect(retryAfterSeconds({ 'x-ratelimit-reset-requests': '1h2m3.5s' }, now)).toBe(3723.5);
    expect(retryAfterSeconds({}, now)).toBeUndefined();
  });
});

describe('readErrorEnvelope', () => {
  it('reads the OpenAI/Azure envelope, the API-gateway shape and plain text', () => {
    const res = (json: unknown, text = JSON.stringify(json)) => ({ status: 400, headers: {}, json: json as never, text });
    expect(readErrorEnvelope(res({ error: { message: 'm', code: 'c', type: 't', param: 'p', innererror: { code: 'ic' } } }))).toEqual({
      message: 'm',
      code: 'c',
      type: 't',
      param: 'p',
      innerCode: 'ic',
    });
    expect(readErrorEnvelope(res({ statusCode: 429, message: 'slow' }))).toMatchObject({ message: 'slow', code: undefined });
    expect(readErrorEnvelope(res({ error: 'flat message' }))).toMatchObject({ message: 'flat message' });
    expect(readErrorEnvelope(res(undefined, '<html>bad gateway</html>')).message).toBe('<html>bad gateway</html>');
    expect(readErrorEnvelope({ status: 502, headers: {}, json: undefined, text: '' }).message).toBe('HTTP 502');
  });

  it('spots moderation by code, inner code or wording', () => {
    expect(isModeration({ message: 'x', code: 'moderation_blocked' })).toBe(true);
    expect(isModeration({ message: 'x', innerCode: 'ResponsibleAIPolicyViolation' })).toBe(true);
    expect(isModeration({ message: "triggering Azure OpenAI's content management policy" })).toBe(true);
    expect(isModeration({ message: "Invalid value: '10'.", code: 'invalid_value' })).toBe(false);
  });
});
