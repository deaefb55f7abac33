import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, clientEnv, CONTROL, startDemoGateway, type DemoGateway } from './harness.js';

const run = promisify(execFile);
let gw: DemoGateway;
let restoreEnv: () => void;
let work: string;
let embeddingModel: string;

beforeAll(async () => {
  gw = await startDemoGateway();
  restoreEnv = clientEnv(gw);
  work = mkdtempSync(join(tmpdir(), 'gw-cli-embed-'));
  embeddingModel = [...gw.services.catalog.models.values()].find((m) => m.capabilities.includes('embedding'))!.name;
});
afterAll(async () => {
  restoreEnv?.();
  await gw?.close();
});

/** Reads a float32 .npy written by the CLI: shape from the header, values from the body. */
function readNpy(buf: Buffer): { shape: number[]; values: Float32Array } {
  expect(buf.subarray(0, 6).toString('latin1')).toBe('\x93NUMPY');
  const headerLen = buf.readUInt16LE(8);
  expect((10 + headerLen) % 64).toBe(0);
  const header = buf.subarray(10, 10 + headerLen).toString('latin1');
  expect(header).toContain("'descr': '<f4'");
  const shape = /'shape': \((\d+), (\d+)\)/.exec(header)!.slice(1).map(Number);
  const data = buf.subarray(10 + headerLen);
  return { shape, values: new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)) };
}

describe('gateway embed and models (client CLI against the embedded default)', () => {
  it('embeds several texts: one summary line each, the API response with --json', async () => {
    const text = await cli('embed', '--model', embeddingModel, 'hello', 'world');
    expect(text.code, text.err).toBe(0);
    const lines = text.out.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^0\t\d+ dims\t\[-?\d/);
    const json = await cli('embed', '--model', embeddingModel, 'hello', 'world', '--json', '--dimensions', '8');
    expect(json.code, json.err).toBe(0);
    const res = JSON.parse(json.out);
    expect(res.data).toHaveLength(2);
    expect(res.data[1].embedding).toHaveLength(8);
  });

  it('writes a float32 .npy matrix whose rows are the API vectors', async () => {
    const file = join(work, 'v.npy');
    const r = await cli('embed', '--model', embeddingModel, 'alpha', 'beta', 'gamma', '--format', 'npy', '--output', file, '--dimensions', '16');
    expect(r.code, r.err).toBe(0);
    const { shape, values } = readNpy(readFileSync(file));
    expect(shape).toEqual([3, 16]);
    const floats = JSON.parse((await cli('embed', '--model', embeddingModel, 'alpha', 'beta', 'gamma', '--json', '--dimensions', '16')).out);
    for (let row = 0; row < 3; row++) {
      for (let col = 0; col < 16; col++) expect(values[row * 16 + col]).toBeCloseTo(floats.data[row].embedding[col], 5);
    }
    const badFormat = await cli('embed', '--model', embeddingModel, 'x', '--format', 'csv');
    expect(badFormat.code).toBe(2);
  });

  it('lists models as tab-separated lines, or JSON', async () => {
    const human = await cli('models');
    expect(human.code, human.err).toBe(0);
    const rows = human.out.trim().split('\n').map((l) => l.split('\t'));
    expect(rows.find((r) => r[0] === embeddingModel)?.[2]).toContain('embedding');
    const json = JSON.parse((await cli('models', '--json')).out);
    expect(json.data.map((m: { id: string }) => m.id)).toContain(embeddingModel);
  });

  it('as a separate process with pipes (no terminal): plain text, no control characters, a parseable --json', async () => {
    const env = { ...process.env, GATEWAY_URL: gw.url, GATEWAY_API_KEY: gw.key, GATEWAY_CLI_POLL_MS: '100' };
    const entry = ['--import', 'tsx', '--input-type=module', '-e', "const { main } = await import('./src/main.ts'); process.exitCode = await main(process.argv.slice(1));"];
    const model = [...gw.services.catalog.models.values()].find((m) => m.ownedBy === 'sora' && m.capabilities.includes('video'))!.name;
    const file = join(work, 'piped.mp4');
    const video = await run(process.execPath, [...entry, 'video', 'create', '--model', model, '--prompt', 'a fox', '--output', file], { env });
    expect(video.stdout.trim()).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(video.stderr).toMatch(/status completed/);
    expect(video.stdout + video.stderr).not.toMatch(CONTROL);
    const models = await run(process.execPath, [...entry, 'models', '--json'], { env });
    expect(JSON.parse(models.stdout).object).toBe('list');
  }, 90_000);
});
