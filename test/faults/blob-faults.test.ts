import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import type { TestGateway } from '../helpers/gateway.js';
import { abortAfter, eventually, fdCount, httpCall } from './client.js';
import { storedVideo } from './stored-video.js';
import { expectErrorShape } from './env.js';

/**
 * Videos the gateway keeps itself (Veo without a storage bucket returns the bytes inline): the file
 * streams behind a download. A file that went missing is a 404, a client that leaves closes the file.
 */
let sim: SimServer;
let gw: TestGateway;
let key: string;
let jobId: string;
let dir: string;

beforeAll(async () => {
  ({ sim, gw, key, jobId } = await storedVideo());
  dir = join(gw.dataDir, 'videos');
  expect(readdirSync(dir).length).toBe(1);
}, 30_000);
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const content = (headers: Record<string, string> = {}) => httpCall(`${gw.url}/v1/videos/${jobId}/content`, { key, headers });

describe('stored videos', () => {
  it('a client leaving mid-download closes the file', async () => {
    // A larger stored copy, so the download is still running when the client leaves.
    writeFileSync(join(dir, readdirSync(dir)[0]!), Buffer.alloc(8 * 1024 * 1024, 1));
    expect((await content()).body.length).toBe(8 * 1024 * 1024);
    const fds = fdCount();
    const r = await abortAfter(`${gw.url}/v1/videos/${jobId}/content`, { key, afterBytes: 64 * 1024 });
    expect(r.status).toBe(200);
    let now = 0;
    expect(await eventually(() => (now = fdCount()) <= fds), `descriptors: ${now} after, ${fds} before`).toBe(true);
  });

  it('a range past the end of a stored video: 416 with its size', async () => {
    const r = await content({ range: 'bytes=99999999-' });
    expect(r.status).toBe(416);
    expectErrorShape(r.json, 'invalid_request_error', 'range_not_satisfiable');
    expect(r.headers['content-range']).toBe(`bytes */${8 * 1024 * 1024}`);
  });

  it('a stored file that went missing: 404 video_not_found, and the gateway keeps serving', async () => {
    rmSync(join(dir, readdirSync(dir)[0]!));
    const r = await content();
    expect(r.status).toBe(404);
    expectErrorShape(r.json, 'not_found', 'video_not_found');
    expect((await httpCall(`${gw.url}/health`)).status).toBe(200);
  });
});
