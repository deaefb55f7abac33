import { afterAll, describe, expect, it } from 'vitest';
import { generatedText, readCompletion, renderCompletion } from '../../src/chat/completion-body.js';
import { LargeCompletions } from '../../src/chat/large-completions.js';
import { readUsage } from '../../src/chat/usage.js';
import { redactorFor } from '../../src/core/redact.js';
import type { JsonObject } from '../../src/core/json.js';
import type { Upstream } from '../../src/http/types.js';

/**
 * A large chat answer is prepared in the answer worker: what it hands back must be what the main
 * thread makes of a small answer (completion-body.ts), whatever the answer holds.
 */
const KEY = 'sk-upstream-secret-0123456789abcdef';
const up: Upstream = { name: 'u', vendor: 'openai', baseUrl: 'http://127.0.0.1:9', apiKey: KEY, models: ['m'], priority: 0, weight: 1, timeoutMs: 1_000, options: {} };
const large = new LargeCompletions();

afterAll(() => large.close());

function onMainThread(raw: Buffer, cost: number): { body: Buffer; json: JsonObject } {
  const read = readCompletion(raw);
  if ('verdict' in read) throw new Error('not a completion');
  return { body: renderCompletion(raw, read.json, cost, (t) => redactorFor(up).ownCredentials(t)), json: read.json };
}

async function inWorker(raw: Buffer) {
  const out = await large.prepare(Buffer.from(raw), up, undefined);
  if (!out.ok) throw new Error(`not a completion: ${out.verdict.message}`);
  return out.value;
}

const choice = (content: string) => ({ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' });

describe('an answer prepared in the worker', () => {
  it('is the main thread rendering, priced and without the upstream key (the amount padded with spaces)', async () => {
    const answer = {
      id: 'c1',
      choices: [choice(`quoting ${KEY} and "escapes" \n \u2028 é`), { ...choice('two'), index: 1 }],
      // The vendor's own cost is replaced where it stands, as on the main thread.
      usage: { prompt_tokens: 12, cost: 99, completion_tokens: 7, completion_tokens_details: { reasoning_tokens: 2 } },
      system_fingerprint: 'fp',
    };
    const raw = Buffer.from(JSON.stringify(answer));
    const prepared = await inWorker(raw);
    expect(prepared.usage).toEqual(readUsage(answer.usage));
    const sent = prepared.render(0.000123).toString('utf8');
    const main = onMainThread(raw, 0.000123).body.toString('utf8');
    expect(sent).not.toContain(KEY);
    expect(sent.replace(/("cost":0\.000123) +/, '$1')).toBe(main);
    expect(JSON.parse(sent)).toEqual(JSON.parse(main));
  });

  it('without usage: the same bytes, and the output counted from the messages', async () => {
    const raw = Buffer.from(JSON.stringify({ id: 'c2', choices: [choice('a few words of generated text here')] }));
    const prepared = await inWorker(raw);
    const main = onMainThread(raw, 0);
    expect(prepared.usage).toBeUndefined();
    expect(await prepared.generated()).toBe(await generatedText(main.json));
    expect(await prepared.generated()).toBeGreaterThan(0);
    expect(prepared.render(0).equals(main.body)).toBe(true);
  });

  it('an error inside a choice, or a body that is not JSON, is no completion: the verdict for the next upstream', async () => {
    for (const body of [JSON.stringify({ choices: [choice('a'), { index: 1, error: { message: 'failed' } }] }), '<html>proxy</html>']) {
      const out = await large.prepare(Buffer.from(body), up, undefined);
      expect(out.ok).toBe(false);
      if (!out.ok) expect(out.verdict).toMatchObject({ kind: 'retryable', status: 502 });
    }
  });

  it('a request given up before its turn never reaches the worker', async () => {
    const gone = new AbortController();
    gone.abort();
    await expect(large.prepare(Buffer.from('{}'), up, gone.signal)).rejects.toMatchObject({ reason: 'aborted' });
  });

  it('an answer whose numbers would be written out to several times its size is refused (the answer budget counted its bytes)', async () => {
    // 2 MB of `1e20`, each written as 21 digits once rendered: ~5x.
    const numbers = `[${Array.from({ length: 400_000 }, () => '1e20').join(',')}]`;
    const text = `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"logprobs":${numbers}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`;
    // (prepare moves the buffer it is given to the worker.)
    const out = await large.prepare(Buffer.from(text), up, undefined);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.verdict).toMatchObject({ kind: 'retryable', status: 502, message: expect.stringMatching(/once rendered/) });
    // Log probabilities as vendors write them grow by a few characters each, and pass.
    const logprobs = `[${Array.from({ length: 200_000 }, (_, i) => `-${(i % 9) + 1}.5e-6`).join(',')}]`;
    const real = await large.prepare(Buffer.from(text.replace(numbers, logprobs)), up, undefined);
    expect(real.ok, real.ok ? "" : real.verdict.message).toBe(true);
  });
});
