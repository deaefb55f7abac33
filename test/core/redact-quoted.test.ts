import { describe, expect, it } from 'vitest';
import { redact } from '../../src/core/redact.js';

/**
 * Credential parameters whose value stands in quotes, raw or JSON-escaped: upstream messages quote
 * them (`key="..."`), and a relayed event's text is JSON, where the same quote is `\"`. The value
 * goes, the quotes stay, and JSON text stays JSON.
 */
const VALUE = 'Zq81xV0-secret-value';

describe('redact: quoted credential values', () => {
  it('replaces a value in plain quotes', () => {
    for (const [text, want] of [
      [`rejected key="${VALUE}" here`, 'rejected key="[redacted]" here'],
      [`rejected api_key='${VALUE}' here`, "rejected api_key='[redacted]' here"],
      [`Credential="${VALUE}/20240101/us-east-1/s3/aws4_request"`, 'Credential="[redacted]"'],
      [`Incorrect API key provided: "${VALUE}".`, 'Incorrect API key provided: "[redacted]".'],
    ]) {
      expect(redact(text!), text).toBe(want);
    }
  });

  it('replaces a value in JSON-escaped quotes and leaves the JSON valid', () => {
    for (const message of [
      `upstream said: key="${VALUE}" is not valid`,
      `token='${VALUE}' expired`,
      `Signature="${VALUE}" does not match`,
      `Incorrect API key provided: "${VALUE}"`,
      `password="${VALUE}\\with\\backslashes/and/slashes" refused`,
    ]) {
      const text = JSON.stringify({ error: { message } });
      const out = redact(text);
      expect(out, text).not.toContain('Zq81xV0');
      expect(out).not.toContain('backslashes');
      const parsed = JSON.parse(out) as { error: { message: string } };
      expect(parsed.error.message).toContain('[redacted]');
    }
  });

  it('keeps what follows an escape that is not part of a value', () => {
    const text = JSON.stringify({ message: `key=${VALUE}\nnext line stays` });
    const out = redact(text);
    expect(JSON.parse(out)).toEqual({ message: 'key=[redacted]\nnext line stays' });
  });
});
