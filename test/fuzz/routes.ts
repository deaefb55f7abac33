import fc from 'fast-check';
import type { FuzzTargets } from './requests.js';
import { enc, hostileCount, nasty } from './values.js';

/** Every route of the gateway, with the ids, queries and body kinds the generator aims at it. */
type Who = 'user' | 'admin' | 'none';
export interface Route {
  method: string;
  /** The route as `--only` matches it, e.g. `POST /v1/videos/{id}/remix`. */
  name: string;
  path: fc.Arbitrary<string>;
  who: Who;
  /** A body kind of bodies.ts, or 'multipart:<kind>' for a form. */
  body?: string;
  /** Realistic query strings of the route. */
  query?: fc.Arbitrary<string>;
  /** Serves bytes (Range applies). */
  content?: boolean;
  /** Counts wrong credentials in its body: always sent from an address of its own. */
  guessed?: boolean;
}

/** Path segments for ids: real ones, tampered real ones, or junk. */
function idFor(pool: string[]): fc.Arbitrary<string> {
  const real = pool.length > 0 ? fc.constantFrom(...pool) : fc.constant('x');
  const tampered = fc.tuple(real, fc.nat(), fc.constantFrom('A', '_', '-', '')).map(([id, i, c]) => {
    const at = id.length === 0 ? 0 : i % id.length;
    return id.slice(0, at) + c + id.slice(at + 1);
  });
  return fc.oneof({ weight: 3, arbitrary: real }, tampered, nasty.map((s) => enc(s)), nasty.filter((s) => !/[/?#\s]/.test(s)));
}

/** A query of some of `params`, each value percent-encoded. */
function queryOf(params: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const entries = Object.entries(params).map(([k, v]) => fc.option(v.map((x) => `${k}=${enc(x)}`), { nil: undefined, freq: 2 }));
  return fc.tuple(...entries).map((kv) => {
    const set = kv.filter((x): x is string => x !== undefined);
    return set.length > 0 ? `?${set.join('&')}` : '';
  });
}

export const count = fc.oneof(fc.constantFrom('1', '2', '10', '100', '1000', '1001'), hostileCount.map((v) => String(v)));
const date = fc.oneof(
  fc.constantFrom('2026-01-01', '2024-02-30', '2026-13-01', '2026-01-01T00:00:00', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00+14:00', '1e12', '0', '9999-12-31', '-000001-01-01'),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  nasty,
);

export function routes(t: FuzzTargets): Route[] {
  const video = idFor(t.videoIds);
  const file = idFor(t.fileIds);
  const account = idFor(t.accounts);
  const victim = idFor(t.victims);
  const doomedVideo = idFor([...t.doomedVideoIds, t.videoIds[1] ?? 'x']);
  const doomedFile = idFor([...t.doomedFileIds, t.fileIds[1] ?? 'x']);
  const keyId = idFor(t.keyIds);
  const webhook = idFor(t.webhookIds);
  const c = (path: string) => fc.constant(path);
  // A signed link as given, or with its signature, expiry or id tampered with (the query is added by the route's focus).
  const signed = (t.signedPaths.length > 0 ? fc.constantFrom(...t.signedPaths) : fc.constant('/v1/videos/x/content?expires=1&signature=x')).chain((p) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(p) },
      fc.nat().map((i) => p.slice(0, i % p.length) + (p[i % p.length] === 'A' ? 'B' : 'A') + p.slice((i % p.length) + 1)),
      fc.constantFrom(p.replace(/expires=\d+/, 'expires=1'), p.replace(/expires=\d+/, 'expires=99999999999999'), p.replace(/&signature=[^&]*/, ''), `${p}&signature=x`, `${p}&index=1`),
    ),
  );
  const list = (ids: fc.Arbitrary<string>, extra: Record<string, fc.Arbitrary<string>> = {}) =>
    queryOf({ after: ids, limit: count, order: fc.constantFrom('asc', 'desc', 'x'), status: fc.constantFrom('processing', 'completed', 'failed', 'queued', 'in_progress', 'x'), model: fc.oneof(fc.constantFrom(...t.models), nasty), from: date, to: date, ...extra });
  const usage = queryOf({ from: date, to: date, group_by: fc.constantFrom('day', 'model', 'key', 'x'), format: fc.constantFrom('csv', 'json', 'x'), account, key: keyId, model: nasty });
  const content = queryOf({ index: count, variant: fc.constantFrom('video', 'thumbnail', 'spritesheet', 'x'), signature: nasty, expires: count });
  return [
    { method: 'GET', name: '/health', path: c('/health'), who: 'none' },
    { method: 'GET', name: '/ready', path: c('/ready'), who: 'none' },
    { method: 'GET', name: '/metrics', path: c('/metrics'), who: 'admin' },
    { method: 'GET', name: '/|/openapi.json|/docs|/console', path: fc.constantFrom('/', '/openapi.json', '/docs', '/console'), who: 'none' },
    { method: 'GET', name: '/v1/models', path: c('/v1/models'), who: 'user' },
    { method: 'GET', name: '/v1/models/{id}', path: idFor(t.models).map((id) => `/v1/models/${id}`), who: 'user' },
    { method: 'POST', name: '/v1/videos/generations', path: c('/v1/videos/generations'), who: 'user', body: 'video' },
    { method: 'POST', name: '/v1/videos', path: c('/v1/videos'), who: 'user', body: 'openaiVideo' },
    { method: 'POST', name: '/v1/videos (multipart)', path: c('/v1/videos'), who: 'user', body: 'multipart:openaiVideo' },
    { method: 'GET', name: '/v1/videos', path: c('/v1/videos'), who: 'user', query: list(video) },
    { method: 'GET', name: '/v1/videos/{id}', path: video.map((id) => `/v1/videos/${id}`), who: 'user' },
    { method: 'DELETE', name: '/v1/videos/{id}', path: doomedVideo.map((id) => `/v1/videos/${id}`), who: 'user' },
    { method: 'GET', name: '/v1/videos/{id}/content', path: video.map((id) => `/v1/videos/${id}/content`), who: 'user', query: content, content: true },
    { method: 'GET', name: '/v1/videos/{id}/content (signed)', path: signed, who: 'none', content: true },
    { method: 'POST', name: '/v1/videos/{id}/remix', path: video.map((id) => `/v1/videos/${id}/remix`), who: 'user', body: 'remix' },
    { method: 'POST', name: '/v1/videos/edits', path: c('/v1/videos/edits'), who: 'user', body: 'edit' },
    { method: 'POST', name: '/v1/videos/edits (multipart)', path: c('/v1/videos/edits'), who: 'user', body: 'multipart:edit' },
    { method: 'POST', name: '/v1/videos/extensions', path: c('/v1/videos/extensions'), who: 'user', body: 'extend' },
    { method: 'POST', name: '/v1/videos/extensions (multipart)', path: c('/v1/videos/extensions'), who: 'user', body: 'multipart:extend' },
    { method: 'POST', name: '/v1/videos/characters', path: c('/v1/videos/characters'), who: 'user', body: 'multipart:character' },
    { method: 'GET', name: '/v1/videos/characters/{id}', path: video.map((id) => `/v1/videos/characters/${id}`), who: 'user' },
    { method: 'POST', name: '/v1/embeddings', path: c('/v1/embeddings'), who: 'user', body: 'embeddings' },
    { method: 'POST', name: '/v1/chat/completions', path: c('/v1/chat/completions'), who: 'user', body: 'chat' },
    { method: 'POST', name: '/v1/files', path: c('/v1/files'), who: 'user', body: 'multipart:file' },
    { method: 'GET', name: '/v1/files', path: c('/v1/files'), who: 'user', query: list(file, { purpose: fc.constantFrom('vision', 'user_data', 'x') }) },
    { method: 'GET', name: '/v1/files/{id}', path: file.map((id) => `/v1/files/${id}`), who: 'user' },
    { method: 'DELETE', name: '/v1/files/{id}', path: doomedFile.map((id) => `/v1/files/${id}`), who: 'user' },
    { method: 'GET', name: '/v1/files/{id}/content', path: file.map((id) => `/v1/files/${id}/content`), who: 'user', content: true },
    { method: 'GET', name: '/uploads/{id}/{id}', path: fc.tuple(account, nasty).map(([a, f]) => `/uploads/${a}/${enc(f)}`), who: 'none', query: queryOf({ expires: count, signature: nasty }), content: true },
    { method: 'GET', name: '/v1/usage|/v1/key', path: fc.constantFrom('/v1/usage', '/v1/key'), who: 'user', query: queryOf({ from: date, to: date }) },
    { method: 'POST', name: '/callbacks/video/{id}', path: nasty.map((s) => `/callbacks/video/${enc(s)}`), who: 'none', body: 'callback' },
    { method: 'POST', name: '/console/session', path: c('/console/session'), who: 'none', body: 'session', guessed: true },
    { method: 'GET', name: '/console/session', path: c('/console/session'), who: 'none' },
    { method: 'DELETE', name: '/console/session', path: c('/console/session'), who: 'none' },
    { method: 'GET', name: '/admin/accounts', path: c('/admin/accounts'), who: 'admin' },
    { method: 'POST', name: '/admin/accounts', path: c('/admin/accounts'), who: 'admin', body: 'account' },
    { method: 'GET', name: '/admin/accounts/{id}', path: account.map((a) => `/admin/accounts/${a}`), who: 'admin' },
    { method: 'PATCH', name: '/admin/accounts/{id}', path: victim.map((a) => `/admin/accounts/${a}`), who: 'admin', body: 'accountPatch' },
    { method: 'POST', name: '/admin/accounts/{id}/topup', path: account.map((a) => `/admin/accounts/${a}/topup`), who: 'admin', body: 'topup' },
    { method: 'GET', name: '/admin/accounts/{id}/ledger', path: account.map((a) => `/admin/accounts/${a}/ledger`), who: 'admin', query: queryOf({ limit: count, kind: fc.constantFrom('credit', 'hold', 'release', 'capture', 'charge', 'x'), model: nasty, from: date, to: date, before: count }) },
    { method: 'GET', name: '/admin/keys', path: c('/admin/keys'), who: 'admin', query: queryOf({ account, after: keyId, limit: count, order: fc.constantFrom('asc', 'desc', 'x') }) },
    { method: 'POST', name: '/admin/keys', path: c('/admin/keys'), who: 'admin', body: 'key' },
    { method: 'POST', name: '/admin/keys/{id}/revoke', path: keyId.map((k) => `/admin/keys/${k}/revoke`), who: 'admin' },
    { method: 'PUT', name: '/admin/keys/{id}/budget', path: keyId.map((k) => `/admin/keys/${k}/budget`), who: 'admin', body: 'budget' },
    { method: 'GET', name: '/admin/usage', path: c('/admin/usage'), who: 'admin', query: usage },
    { method: 'GET', name: '/admin/jobs', path: c('/admin/jobs'), who: 'admin', query: list(video, { account }) },
    { method: 'GET', name: '/admin/jobs/{id}', path: video.map((id) => `/admin/jobs/${id}`), who: 'admin' },
    { method: 'GET', name: '/admin/upstreams', path: c('/admin/upstreams'), who: 'admin' },
    { method: 'GET', name: '/admin/reconcile', path: c('/admin/reconcile'), who: 'admin' },
    { method: 'POST', name: '/admin/webhooks', path: c('/admin/webhooks'), who: 'admin', body: 'webhook' },
    { method: 'GET', name: '/admin/webhooks', path: c('/admin/webhooks'), who: 'admin', query: queryOf({ account }) },
    { method: 'GET', name: '/admin/webhooks/{id}', path: webhook.map((id) => `/admin/webhooks/${id}`), who: 'admin' },
    { method: 'DELETE', name: '/admin/webhooks/{id}', path: webhook.map((id) => `/admin/webhooks/${id}`), who: 'admin' },
    { method: 'GET', name: '/admin/webhooks/{id}/deliveries', path: webhook.map((id) => `/admin/webhooks/${id}/deliveries`), who: 'admin', query: queryOf({ limit: count }) },
    { method: 'GET', name: '/{junk}', path: nasty.map((s) => `/${s.replace(/[/?#]/g, '')}`), who: 'none' },
  ];
}

