import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { cutMarginMs, shutdownTimeoutWarning } from '../../src/shutdown.js';
import { openStore } from '../../src/store/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';

/**
 * SIGTERM while a chat stream runs longer than the drain's grace (server.shutdown_timeout_ms), on
 * the real process (bin/gateway.js) in front of an upstream streaming over HTTP. Shortly before the
 * deadline the requests still in flight are cut as a client hanging up would cut them: the stream
 * ends with a last event saying shutting_down (not a broken socket) and is billed for the tokens it
 * carried, a request still waiting on its upstream is answered 503 shutting_down, and the charge is
 * in the ledger once the process has exited (code 1: requests were cut).
 */
const ADMIN = 'shutdown-cut-admin-token-0123456789';
const GRACE_MS = 3_000;
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;

beforeAll(async () => {
  sim = await startOpenAISimulator();
  dir = mkdtempSync(join(tmpdir(), 'gw-shutdown-cut-'));
});
afterAll(async () => {
  await killLeftover(gw);
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The content of each `data:` event of an SSE text, parsed (the [DONE] line as the string). */
function events(text: string): unknown[] {
  return text
    .split(/\n\n/)
    .map((e) => e.match(/^data: (.*)$/m)?.[1])
    .filter((d): d is string => d !== undefined)
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));
}

const contentEvents = (all: unknown[]) =>
  all.filter((e) => (e as { choices?: { delta?: { content?: string } }[] }).choices?.some((c) => (c.delta?.content ?? '') !== '')).length;

describe('a shutdown whose deadline comes before a stream ends', () => {
  it('cuts the stream with a shutting_down event, bills what it carried, answers a waiting request 503, and exits 1', async () => {
    const database = `sqlite:${join(dir, 'gateway.db')}`;
    // One word a chunk, a chunk every 200 ms: a 100-word answer streams for 20 s, far past the grace.
    sim.settings.chatChunkDelayMs = 200;
    gw = await startGatewayProcess(dir, {
      database,
      data_dir: join(dir, 'data'),
      admin_token: ADMIN,
      secret: 'shutdown-cut-secret-0123456789abcdef',
      server: { shutdown_timeout_ms: GRACE_MS },
      webhooks: { timeout_ms: 500 },
      upstreams: [
        { name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['gpt-4o-mini', 'text-embedding-3-small'], timeout_ms: 30_000 },
      ],
      models: {
        'gpt-4o-mini': { capabilities: ['chat'], price: { per_million_input_tokens: 1000, per_million_output_tokens: 2000 } },
        'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 1000 } },
      },
    });
    const g = gw;
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(g, 'POST', '/admin/accounts', { headers, body: { name: 'cut', balance: '10' } })).status).toBe(201);
    const key = (await call(g, 'POST', '/admin/keys', { headers, body: { account: 'cut' } })).json.key as string;

    const words = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    const res = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, max_tokens: 1000, messages: [{ role: 'user', content: words }] }),
    });
    expect(res.status).toBe(200);
    let text = '';
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const c of res.body!) text += decoder.decode(c as Uint8Array, { stream: true });
      return 'ended';
    })().catch((e: unknown) => `broken: ${String((e as { cause?: unknown }).cause ?? e)}`);
    await waitFor(() => contentEvents(events(text)) >= 3, 'the stream to carry a few words');

    // A request still waiting on its upstream when the cut comes.
    sim.latencyMs = 20_000;
    const embedding = call(g, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'waiting' } }).catch((e: unknown) => e);
    await waitFor(() => sim.received('POST', '/v1/embeddings').length === 1, 'the embeddings request to reach the upstream');

    const at = Date.now();
    g.child.kill('SIGTERM');
    expect(await g.exited).toBe(1);
    const took = Date.now() - at;
    expect(took).toBeGreaterThanOrEqual(GRACE_MS - cutMarginMs(GRACE_MS) - 100);
    expect(took).toBeLessThan(GRACE_MS + 2_000);
    // The stream ended cleanly, its last event the error in the spec's shape.
    expect(await reading).toBe('ended');
    const all = events(text);
    expect(all.at(-1)).toEqual({ error: { type: 'server_error', code: 'shutting_down', message: expect.any(String) } });
    const carried = contentEvents(all);
    expect(carried).toBeGreaterThanOrEqual(3);
    expect(carried).toBeLessThan(100);

    const waited = (await embedding) as Awaited<ReturnType<typeof call>>;
    expect(waited.status, waited.text).toBe(503);
    expect(waited.json.error).toMatchObject({ type: 'server_error', code: 'shutting_down' });

    // Billed for what it carried, estimated from the events (the vendor's usage never came), and
    // written before the exit; the embeddings request was not billed.
    const store = await openStore(database, { dataDir: dir });
    try {
      const acct = (await store.getAccountByName('cut'))!;
      const charges = (await store.listLedger(acct.id)).filter((e) => e.kind === 'charge');
      expect(charges).toHaveLength(1);
      expect(charges[0]!.note).toMatch(new RegExp(`^chat gpt-4o-mini via oa: \\d+ input \\+ ${carried} output tokens \\(estimated`));
      expect(charges[0]!.delta).toBeLessThan(0);
      expect(acct.balance).toBe(10_000_000 + charges[0]!.delta);
    } finally {
      await store.close();
    }
    const output = g.output.join('\n');
    // The upstream's 30 s timeout reaches past the cut: said at start (read after the exit, since
    // log lines are written in batches and may come after the start banner).
    expect(output).toMatch(/upstream timeout_ms reaches past the point where a shutdown cuts the requests in flight \(2700 ms.*oa \(30000\)/);
    expect(output).toMatch(/shutdown deadline near: cutting the requests still in flight/);
    expect(output).toMatch(/shutdown complete after cutting requests short/);
    // The cut left time to flush: the process ended on its own before the deadline's hard exit.
    expect(output).not.toMatch(/shutdown deadline passed/);
  }, 40_000);
});

describe('shutdownTimeoutWarning', () => {
  const upstream = (name: string, timeout_ms: number) => ({ name, timeout_ms }) as never;
  it('names the upstreams whose timeout reaches past the cut, and nothing when none does', () => {
    const server = { shutdown_timeout_ms: 25_000 } as never;
    expect(shutdownTimeoutWarning({ server, upstreams: [upstream('a', 20_000), upstream('b', 24_000)] })).toBeUndefined();
    const w = shutdownTimeoutWarning({ server, upstreams: [upstream('a', 20_000), upstream('b', 24_001), upstream('c', 30_000)] });
    expect(w).toMatch(/\(24000 ms, shortly before server.shutdown_timeout_ms 25000\): b \(24001\), c \(30000\)\./);
    expect(cutMarginMs(25_000)).toBe(1_000);
    expect(cutMarginMs(3_000)).toBe(300);
  });
});
