import type { Agent } from 'node:http';
import { sendFuzz, type FuzzTargets } from './requests.js';

const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/**
 * Over HTTP, makes what the generator aims at on a running gateway with a demo account: a key of it
 * and a second account with a key, an account and keys to be revoked and reconfigured, jobs and files of
 * each account (and some to be deleted), a webhook endpoint (when the gateway takes one), and reads
 * the models by capability.
 */
export async function aimAt(base: string, agent: Agent, adminToken: string): Promise<FuzzTargets> {
  const admin = { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` };
  const send = async (method: string, path: string, headers: Record<string, string>, body?: unknown, optional = false) => {
    const raw = Buffer.isBuffer(body) ? body : body === undefined ? undefined : JSON.stringify(body);
    const r = await sendFuzz(base, { method, path, headers, body: raw }, agent);
    if (r.status >= 300) {
      if (optional) return undefined;
      throw new Error(`${method} ${path}: ${r.status} ${r.body}`);
    }
    return JSON.parse(r.body);
  };
  // Room for a long run: rate limits and a balance that the generated traffic does not exhaust.
  const roomy = { limits: { video: { rpm: 1_000_000 }, embeddings: { rpm: 1_000_000, tpm: 1_000_000_000 }, chat: { rpm: 1_000_000, tpm: 1_000_000_000 } } };
  await send('PATCH', '/admin/accounts/demo', admin, roomy);
  await send('POST', '/admin/accounts/demo/topup', admin, { amount: 1_000_000 });
  // The demo key has the default limits: the generator sends a key of the demo account's with room.
  const key = (await send('POST', '/admin/keys', admin, { account: 'demo', name: 'fuzz', ...roomy })).key as string;
  await send('POST', '/admin/accounts', admin, { name: 'fuzz-other', balance: 100 });
  const otherKey = (await send('POST', '/admin/keys', admin, { account: 'fuzz-other' })).key as string;
  // What the generator may revoke, re-budget and reconfigure, leaving the keys it sends with working.
  await send('POST', '/admin/accounts', admin, { name: 'fuzz-victim', balance: 100 });
  const keyIds: string[] = [];
  for (let i = 0; i < 3; i++) keyIds.push((await send('POST', '/admin/keys', admin, { account: 'fuzz-victim' })).id as string);
  const listed = (await send('GET', '/v1/models', { authorization: `Bearer ${key}` })).data as { id: string; capabilities: string[]; owned_by?: string }[];
  const byCapability: Record<string, string[]> = {};
  for (const m of listed) for (const c of m.capabilities) (byCapability[c] ??= []).push(m.id);
  const models = listed.map((m) => m.id);
  const create = async (k: string) => (await send('POST', '/v1/videos/generations', { 'content-type': 'application/json', authorization: `Bearer ${k}` }, { model: byCapability.video![0], prompt: 'a fox' })).id as string;
  const videoIds = [await create(key), await create(otherKey)];
  // A job of each video vendor: downloads differ (a stored copy, the vendor's content endpoint, a signed URL).
  const families = new Map(listed.filter((m) => m.capabilities.includes('video')).map((m) => [m.owned_by ?? m.id, m.id]));
  for (const model of families.values()) {
    const job = await send('POST', '/v1/videos/generations', { 'content-type': 'application/json', authorization: `Bearer ${key}` }, { model, prompt: 'a fox' }, true);
    if (job?.id) videoIds.push(job.id);
  }
  const doomedVideoIds = [await create(key), await create(key)];
  const boundary = 'fuzzsetup';
  const form = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nvision\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
    PNG_1PX,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const upload = async (k: string) => (await send('POST', '/v1/files', { 'content-type': `multipart/form-data; boundary=${boundary}`, authorization: `Bearer ${k}` }, form, true))?.id as string | undefined;
  const fileIds = [await upload(key), await upload(otherKey)].filter((id): id is string => id !== undefined);
  const doomedFileIds = [await upload(key)].filter((id): id is string => id !== undefined);
  // Downloads (and Range) are only reached once the jobs are done: wait for them (a poll also refreshes a job).
  let jobs: { status?: string; output_url?: string }[] = [];
  for (const start = Date.now(); Date.now() - start < 40_000; await new Promise((r) => setTimeout(r, 500))) {
    jobs = await Promise.all(videoIds.slice(2).map(async (id) => (await send('GET', `/v1/videos/${id}`, { authorization: `Bearer ${key}` }, undefined, true)) ?? {}));
    if (!jobs.some((j) => j.status === 'processing')) break;
  }
  // Signed output_url links (path and query): downloads without a key.
  const signedPaths = jobs.flatMap((j) => (j.output_url ? [new URL(j.output_url).pathname + new URL(j.output_url).search] : []));
  const hook = await send('POST', '/admin/webhooks', admin, { account: 'demo', url: 'https://93.184.216.34/hook' }, true);
  return {
    key, otherKey, adminToken, videoIds, doomedVideoIds, signedPaths, fileIds, doomedFileIds, webhookIds: hook?.id ? [hook.id] : [], models, byCapability,
    accounts: ['demo', 'fuzz-other', 'fuzz-victim'], victims: ['fuzz-victim'], keyIds,
  };
}
