import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { resolveSecrets } from '../../src/config/runtime.js';
import { call, startTestGateway } from '../helpers/gateway.js';

/**
 * The admin token is one secret that opens the whole admin API. The console sign-in limits guesses
 * at it per client address; the same guesses sent as `Authorization: Bearer` to /admin/* must be
 * limited as well, or the console's limit protects nothing.
 */
describe('wrong admin tokens on /admin', () => {
  it('are limited per client address: past 10 a minute, 429 with Retry-After (even for the right token)', async () => {
    const gw = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const from = (ip: string, token: string, path = '/admin/accounts') =>
        call(gw, 'GET', path, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip } });
      // The operator, signed in to the console from that address before the guessing started.
      const signIn = await call(gw, 'POST', '/console/session', { body: { token: gw.adminToken }, headers: { 'x-forwarded-for': '203.0.113.7' } });
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
      for (let i = 0; i < 10; i++) expect((await from('203.0.113.7', `guess-${i}`)).status).toBe(401);
      for (const path of ['/admin/accounts', '/admin/keys', '/admin/reconcile']) {
        const r = await from('203.0.113.7', gw.adminToken, path);
        expect(r.status, path).toBe(429);
        expect(r.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // A console session is no guess: the operator's keeps working through the lockout.
      expect((await call(gw, 'GET', '/admin/accounts', { headers: { cookie, 'x-forwarded-for': '203.0.113.7' } })).status).toBe(200);
      // Other addresses are unaffected; the right token is never counted.
      for (let i = 0; i < 20; i++) expect((await from('203.0.113.8', gw.adminToken)).status).toBe(200);
      // A request with no credential at all is no guess: 401, not counted.
      for (let i = 0; i < 20; i++) expect((await call(gw, 'GET', '/admin/accounts', { headers: { 'x-forwarded-for': '203.0.113.9' } })).status).toBe(401);
      expect((await from('203.0.113.9', gw.adminToken)).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('the limit ends with its window', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = { now: () => now };
    const gw = await startTestGateway({}, { clock });
    try {
      for (let i = 0; i < 10; i++) expect((await call(gw, 'GET', '/admin/accounts', { key: `guess-${i}` })).status).toBe(401);
      expect((await call(gw, 'GET', '/admin/accounts', { key: gw.adminToken })).status).toBe(429);
      now += 61_000;
      expect((await call(gw, 'GET', '/admin/accounts', { key: gw.adminToken })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});

describe('one count of wrong admin tokens per address, wherever they are tried', () => {
  it('guesses at the console sign-in and at /admin add up: the eleventh anywhere is refused', async () => {
    const gw = await startTestGateway({});
    try {
      for (let i = 0; i < 5; i++) expect((await call(gw, 'POST', '/console/session', { body: { token: `guess-${i}` } })).status).toBe(401);
      for (let i = 0; i < 5; i++) expect((await call(gw, 'GET', '/admin/accounts', { headers: { authorization: `Bearer guess-${i}` } })).status).toBe(401);
      expect((await call(gw, 'GET', '/admin/accounts', { headers: { authorization: `Bearer ${gw.adminToken}` } })).status).toBe(429);
      expect((await call(gw, 'POST', '/console/session', { body: { token: gw.adminToken } })).status).toBe(429);
    } finally {
      await gw.close();
    }
  });
});

describe('admin_token in the configuration', () => {
  it('is refused shorter than 24 characters, with a message that says what to do', () => {
    expect(() => validateConfig({ admin_token: 'short-token' }, 'gateway.yaml')).toThrow(/gateway\.yaml: admin_token: .*at least 24 characters/);
    expect(() => validateConfig({ admin_token: 'x'.repeat(23) }, 'gateway.yaml')).toThrow(/admin_token/);
    expect(validateConfig({ admin_token: 'x'.repeat(24) }, 'gateway.yaml').admin_token).toBe('x'.repeat(24));
    // Unset (or an unset ${VARIABLE}): generated, as before.
    const cfg = validateConfig({ admin_token: '${NO_SUCH_VARIABLE_HERE}', data_dir: mkdtempSync(join(tmpdir(), 'gw-admin-token-')) }, 'gateway.yaml', {});
    expect(cfg.admin_token).toBeUndefined();
    try {
      expect(resolveSecrets(cfg).adminToken.length).toBeGreaterThanOrEqual(24);
    } finally {
      rmSync(cfg.data_dir, { recursive: true, force: true });
    }
  });

  it('a data_dir/admin-token file shorter than 24 characters is replaced, as a config value that short is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-admin-token-file-'));
    try {
      const cfg = validateConfig({ data_dir: dir }, 'gateway.yaml', {});
      writeFileSync(join(dir, 'admin-token'), 'twenty-chars-written\n');
      const token = resolveSecrets(cfg).adminToken;
      expect(token).not.toBe('twenty-chars-written');
      expect(token.length).toBeGreaterThanOrEqual(24);
      expect(readFileSync(join(dir, 'admin-token'), 'utf8').trim()).toBe(token);
      // A long enough file is kept.
      writeFileSync(join(dir, 'admin-token'), `${'k'.repeat(24)}\n`);
      expect(resolveSecrets(cfg).adminToken).toBe('k'.repeat(24));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
