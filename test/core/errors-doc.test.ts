import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errors, GatewayError } from '../../src/core/errors.js';
import { toGatewayError } from '../../src/http/render.js';

/** Every row of docs/errors.md: code -> its [status, type] rows (a vendor's refusal keeps the vendor's status). */
function documented(): Map<string, [number, string][]> {
  const text = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = new Map<string, [number, string][]>();
  for (const m of text.matchAll(/^\| ([a-z_]+) \| (\d{3}) \| ([a-z_]+) \|/gm)) rows.set(m[1]!, [...(rows.get(m[1]!) ?? []), [Number(m[2]), m[3]!]]);
  return rows;
}

/** Calls each catalogue constructor with plausible arguments. */
function produced(): GatewayError[] {
  const out: GatewayError[] = [];
  for (const [name, make] of Object.entries(errors)) {
    const fn = make as (...a: unknown[]) => GatewayError;
    const e = name === 'rateLimited' ? fn('x', 3) : name === 'bodyTooLarge' || name === 'rangeNotSatisfiable' ? fn(10) : fn('x');
    out.push(e);
  }
  // Codes passed explicitly at call sites.
  for (const code of ['missing_required_parameter', 'invalid_body', 'forbidden_key', 'unsupported_media_type', 'model_not_supported',
    'invalid_media', 'input_too_long', 'invalid_content_length', 'bad_request', 'request_too_large', 'unsupported_input_type', 'input_in_extra_body', 'extra_body_too_large', 'too_deep', 'too_many_media', 'malformed_request', 'already_exists', 'already_revoked', 'ambiguous_key',
    'invalid_cursor', 'remix_unsupported', 'operation_unsupported', 'unsupported_input_reference', 'too_many_files', 'too_many_fields', 'unknown_parameter',
    'media_location_not_allowed', 'invalid_webhook_url', 'too_many_endpoints', 'already_disabled', 'repeated_parameter']) out.push(errors.invalidRequest('x', undefined, code));
  for (const code of ['route_not_found', 'video_not_found', 'video_expired', 'account_not_found', 'key_not_found', 'variant_unavailable', 'upload_not_found', 'file_not_found', 'character_not_found',
    'webhook_not_found', 'callback_not_found']) out.push(errors.notFound('x', code));
  out.push(errors.unauthenticated(), errors.contentPolicy('x'), errors.upstreamRejected('x'));
  // A vendor's 404, 413 and 422 keep their status (routing/failover.ts).
  for (const status of [404, 413, 422]) out.push(new GatewayError(status, 'invalid_request_error', 'x', { code: 'upstream_rejected' }));
  return out;
}

describe('docs/errors.md matches the code', () => {
  it('documents every code the catalogue produces, with its status and type', () => {
    const docs = documented();
    for (const e of produced()) {
      expect(docs.get(e.code!), `code ${e.code}`).toContainEqual([e.status, e.type]);
    }
  });

  it('every documented status is one of spec 7.2 (plus 416 for ranges, 409 for an Idempotency-Key in use)', () => {
    const allowed = new Set([400, 401, 402, 403, 404, 408, 409, 413, 416, 422, 429, 500, 502, 503, 504]);
    for (const [, rows] of documented()) for (const [status] of rows) expect(allowed.has(status)).toBe(true);
  });

  it('renders framework errors into the catalogue and hides internals', () => {
    expect(toGatewayError({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }, 100).toBody().error.code).toBe('body_too_large');
    expect(toGatewayError(new SyntaxError('Unexpected token'), 1).status).toBe(400);
    const internal = toGatewayError(new Error('db password is hunter2'), 1);
    expect(internal.status).toBe(500);
    expect(JSON.stringify(internal.toBody())).not.toContain('hunter2');
  });

  it('429 always carries Retry-After in whole seconds', () => {
    expect(errors.rateLimited('x', 0.2).headers['retry-after']).toBe('1');
    expect(errors.rateLimited('x', 4.1).headers['retry-after']).toBe('5');
  });
});
