import { describe, expect, it } from 'vitest';
import { call, startTestGateway } from '../helpers/gateway.js';

/** The console sign-in limit under concurrent guesses and against requests a foreign web page can make. */
const wrongKey = (i: number) => `sk-gw-${String(i).padStart(43, 'B')}`;

describe('POST /console/session limits', () => {
  it('counts each attempt before the key lookup (concurrent wrong keys cannot all get through) and gives it back on success', async () => {
    const gw = await startTestGateway({});
    const fresh = await startTestGateway({});
    try {
      const signIn = (token: string, to = gw) => call(to, 'POST', '/console/session', { body: { token } });
      // A slow key lookup (a remote database) keeps every attempt in flight at once.
      const auth = gw.services.authenticator;
      const lookup = auth.authenticate.bind(auth);
      auth.authenticate = async (header) => {
        await new Promise((r) => setTimeout(r, 100));
        return lookup(header);
      };
      const statuses = await Promise.all(Array.from({ length: 60 }, async (_, i) => (await signIn(wrongKey(i))).status));
      expect(statuses.filter((s) => s === 401)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);

      // Successful sign-ins give their place back, so signing in often never locks anyone out.
      const { key } = await fresh.newKey(1);
      for (let i = 0; i < 9; i++) expect((await signIn(wrongKey(i), fresh)).status).toBe(401);
      for (let i = 0; i < 25; i++) expect((await signIn(i % 2 ? key : fresh.adminToken, fresh)).status).toBe(200);
      // 9 failures counted: the 10th is still judged, the 11th attempt is not.
      expect((await signIn(wrongKey(99), fresh)).status).toBe(401);
      expect((await signIn(fresh.adminToken, fresh)).status).toBe(429);
    } finally {
      await gw.close();
      await fresh.close();
    }
  });

  it('a body that is not application/json is refused before it counts: a foreign page cannot lock the operator out', async () => {
    const gw = await startTestGateway({});
    try {
      // What a cross-site `fetch(url, {method: 'POST', mode: 'no-cors', body})` or a form can send: no preflight.
      for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']) {
        for (let i = 0; i < 12; i++) {
          const r = await call(gw, 'POST', '/console/session', { body: 'x', headers: { 'content-type': type, origin: 'https://evil.example' } });
          expect(r.status, type).toBe(400);
          expect(r.json.error, type).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_media_type' });
        }
      }
      // A browser request from another site is refused whatever its body, uncounted too.
      for (let i = 0; i < 12; i++) {
        const r = await call(gw, 'POST', '/console/session', { body: { token: 'x' }, headers: { 'sec-fetch-site': 'cross-site' } });
        expect(r.status).toBe(403);
        expect(r.json.error.type).toBe('permission_denied');
      }
      const ok = await call(gw, 'POST', '/console/session', { body: { token: gw.adminToken }, headers: { 'sec-fetch-site': 'same-origin' } });
      expect(ok.status, ok.text).toBe(200);
      expect((await call(gw, 'POST', '/console/session', { body: { token: gw.adminToken }, headers: { 'content-type': 'Application/JSON; charset=utf-8' } })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});
