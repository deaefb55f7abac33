import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { relayEvents } from '../../src/chat/sse.js';

function collect(sink: PassThrough): { text: () => string; writes: string[] } {
  const writes: string[] = [];
  sink.on('data', (c: Buffer) => writes.push(c.toString('utf8')));
  return { text: () => writes.join(''), writes };
}

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }], usage: null })}\n\n`;
const usageChunk = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } })}\n\n`;

describe('relayEvents', () => {
  it('passes whole events on as they complete, even when the network splits them anywhere', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    const done = relayEvents(source, sink, { forwardUsageChunk: true });
    const all = chunk('Hel') + chunk('lo ') + chunk('wörld') + usageChunk + 'data: [DONE]\n\n';
    const bytes = Buffer.from(all, 'utf8');
    // Split inside an event, inside a multi-byte character, and inside the blank line.
    const cuts = [5, bytes.indexOf(Buffer.from('ö')) + 1, all.indexOf('\n\n') + 1, bytes.length - 3];
    let prev = 0;
    for (const cut of cuts.sort((a, b) => a - b)) {
      source.write(bytes.subarray(prev, cut));
      prev = cut;
      await new Promise((r) => setImmediate(r));
      // Whatever reached the client so far is a sequence of complete events.
      expect(out.text() === '' || out.text().endsWith('\n\n')).toBe(true);
    }
    source.end(bytes.subarray(prev));
    const r = await done;
    expect(out.text()).toBe(all);
    expect(r.usage).toEqual({ promptTokens: 11, completionTokens: 7, reported: true });
    expect(r.chunks).toBe(3); // the usage-only chunk and [DONE] carry no generated text
    expect(r.finished).toBe(true);
  });

  it('reads the usage chunk but does not pass it on when the client did not ask for it', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    const done = relayEvents(source, sink, { forwardUsageChunk: false });
    source.end(chunk('Hi') + usageChunk.replace(/\n\n$/, '\r\n\r\n') + 'data: [DONE]\n\n');
    const r = await done;
    expect(r.usage?.promptTokens).toBe(11);
    expect(out.text()).toBe(chunk('Hi') + 'data: [DONE]\n\n');
  });

  it('ends the client stream with an error event when the upstream breaks mid-stream', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    const done = relayEvents(source, sink, { forwardUsageChunk: false });
    source.write(chunk('partial'));
    await new Promise((r) => setImmediate(r));
    source.destroy(new Error('socket hang up'));
    const r = await done;
    expect(r.finished).toBe(false);
    expect(r.clientGone).toBe(false);
    expect(r.usage).toBeUndefined();
    expect(r.chunks).toBe(1);
    expect(out.text()).toContain(chunk('partial'));
    expect(out.text()).toMatch(/data: \{"error":\{"type":"server_error","code":"upstream_error"/);
    expect(sink.writableEnded).toBe(true);
  });

  it('cancels the upstream when the client goes away', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    collect(sink);
    const done = relayEvents(source, sink, { forwardUsageChunk: false });
    source.write(chunk('one'));
    await new Promise((r) => setImmediate(r));
    sink.destroy();
    const r = await done;
    expect(r.clientGone).toBe(true);
    expect(source.destroyed).toBe(true);
    expect(r.chunks).toBe(1);
  });
});

describe('relayEvents reading each event', () => {
  it('counts only events with generated content, and fully redacts whatever is not a completion chunk', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    const redacted: string[] = [];
    const done = relayEvents(source, sink, { forwardUsageChunk: false, redact: (e) => (redacted.push(e), '') });
    const empty = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })}\n\n`;
    const escaped = 'data: {"\\u0065rror":{"message":"x"}}\n\n';
    source.end(empty + chunk('a') + escaped + 'data: not json\n\n' + 'data: {"message":"proxy says no"}\n\n' + 'data: [DONE]\n\n');
    const r = await done;
    expect(r.chunks).toBe(1);
    expect(redacted).toEqual([escaped, 'data: not json\n\n', 'data: {"message":"proxy says no"}\n\n']);
    expect(out.text()).toBe(empty + chunk('a') + 'data: [DONE]\n\n');
  });

  it('an error inside a choice makes an error event: redacted whole, its content and usage not counted', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    const redacted: string[] = [];
    const done = relayEvents(source, sink, { forwardUsageChunk: false, redact: (e) => (redacted.push(e), '') });
    const plain = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x' }, error: { message: 'upstream at 10.0.0.1 failed' } }] })}\n\n`;
    const escaped = 'data: {"choices":[{"index":0,"delta":{"content":"y"},"\\u0065rror":{"message":"z"}}],"usage":{"prompt_tokens":3,"completion_tokens":9}}\n\n';
    const nullError = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'b' }, error: null }] })}\n\n`;
    source.end(chunk('a') + plain + escaped + nullError + 'data: [DONE]\n\n');
    const r = await done;
    // `a`, and `b` beside an `"error": null` (redacted whole as any chunk that says "error", but generated).
    expect(r.chunks).toBe(2);
    expect(r.usage).toBeUndefined();
    expect(redacted).toEqual([plain, escaped, nullError]);
    expect(out.text()).toBe(chunk('a') + 'data: [DONE]\n\n');
  });

  it('ends an empty stream with an error event: it is no answer', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    const done = relayEvents(source, sink, { forwardUsageChunk: false });
    source.end(': keep-alive\n\n');
    const r = await done;
    expect(r.finished).toBe(true);
    expect(r.chunks).toBe(0);
    expect(out.text()).toMatch(/^: keep-alive\n\ndata: \{"error":\{"type":"server_error","code":"upstream_error"/);
  });
});

describe('relayEvents with a client already gone', () => {
  it('cancels the upstream at once and writes nothing', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    sink.destroy();
    await new Promise((r) => setImmediate(r));
    const r = await relayEvents(source, sink, { forwardUsageChunk: false });
    expect(r.clientGone).toBe(true);
    expect(source.destroyed).toBe(true);
  });
});

describe('relayEvents settling on the usage chunk', () => {
  it('holds the usage chunk until the charge is settled, then passes it on with usage.cost and nothing else changed', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    let release!: (cost: number) => void;
    const seen: number[] = [];
    const done = relayEvents(source, sink, {
      forwardUsageChunk: true,
      settleUsage: (u) => {
        seen.push(u.promptTokens, u.completionTokens);
        return new Promise((r) => (release = r));
      },
    });
    source.end(chunk('Hi') + usageChunk + 'data: [DONE]\n\n');
    await new Promise((r) => setTimeout(r, 20));
    // The content went out; the usage chunk and [DONE] wait for the charge.
    expect(out.text()).toBe(chunk('Hi'));
    release(0.000123);
    const r = await done;
    expect(seen).toEqual([11, 7]);
    expect(r.settled).toBe(true);
    const events = out.text().split('\n\n').filter(Boolean);
    expect(events).toHaveLength(3);
    const priced = JSON.parse(events[1]!.slice('data: '.length));
    expect(priced.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, cost: 0.000123 });
    expect(priced).toMatchObject({ id: 'c1', object: 'chat.completion.chunk', choices: [] });
    expect(events[2]).toBe('data: [DONE]');
  });

  it('settles on the usage chunk but still keeps it from a client that did not ask for it', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    const out = collect(sink);
    let calls = 0;
    const done = relayEvents(source, sink, { forwardUsageChunk: false, settleUsage: async () => (calls++, 1) });
    source.end(chunk('Hi') + usageChunk + usageChunk + 'data: [DONE]\n\n');
    const r = await done;
    expect(calls).toBe(1);
    expect(r.settled).toBe(true);
    expect(out.text()).toBe(chunk('Hi') + 'data: [DONE]\n\n');
  });

  it('does not settle when the stream breaks before the usage chunk (the caller bills the estimate)', async () => {
    const source = new PassThrough();
    const sink = new PassThrough();
    collect(sink);
    let calls = 0;
    const done = relayEvents(source, sink, { forwardUsageChunk: true, settleUsage: async () => (calls++, 1) });
    source.write(chunk('partial'));
    await new Promise((r) => setImmediate(r));
    source.destroy(new Error('socket hang up'));
    const r = await done;
    expect(calls).toBe(0);
    expect(r.settled).toBe(false);
    expect(r.finished).toBe(false);
  });
});

describe('relayEvents with a client that stops reading', () => {
  it('returns when the stalled client is cut while the usage chunk arrives with more events behind it', async () => {
    // A client that never takes a byte: every write past the first few bytes waits for a drain.
    const sink = new Writable({ highWaterMark: 16, write: () => undefined });
    const source = new PassThrough();
    let settled = 0;
    const done = relayEvents(source, sink, { forwardUsageChunk: true, clientStallMs: 30, settleUsage: async () => (settled++, 0.001) });
    // The last read of a stream: content, the usage chunk and [DONE] together. The content's write
    // stalls until the client is cut; [DONE] is then left for a sink that has already closed.
    source.end(chunk('x'.repeat(200)) + usageChunk + 'data: [DONE]\n\n');
    const r = await Promise.race([done, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 1_000))]);
    expect(r).not.toBe('hung');
    expect(settled).toBe(1);
    expect((r as Awaited<typeof done>).clientGone).toBe(true);
    expect(sink.destroyed).toBe(true);
  });
});
