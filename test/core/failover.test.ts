import { describe, expect, it } from 'vitest';
import { TransportError, type Upstream } from '../../src/http/types.js';
import { CircuitBreaker } from '../../src/routing/circuit.js';
import { withFailover } from '../../src/routing/failover.js';

const up = (name: string): Upstream => ({ name, vendor: 'v', baseUrl: 'http://x', models: [], priority: 1, weight: 1, timeoutMs: 1, options: {} });
const ups = [up('a'), up('b')];

describe('failover outcomes', () => {
  it('moves on after a retryable answer and returns the next upstream’s value', async () => {
    const tried: string[] = [];
    const r = await withFailover(ups, async (u) => {
      tried.push(u.name);
      return u.name === 'a' ? { ok: false, verdict: { kind: 'retryable', status: 500, message: 'x' } } : { ok: true, value: 42 };
    });
    expect(tried).toEqual(['a', 'b']);
    expect(r).toMatchObject({ value: 42, upstream: { name: 'b' } });
  });

  it('stops at a client error (upstream_rejected, status kept) without trying the next', async () => {
    const tried: string[] = [];
    const p = withFailover(ups, async (u) => {
      tried.push(u.name);
      return { ok: false, verdict: { kind: 'client', status: 422, message: 'bad tools', code: 'vendor_code', param: 'tools' } };
    });
    await expect(p).rejects.toMatchObject({ status: 422, code: 'upstream_rejected', param: 'tools' });
    expect(tried).toEqual(['a']);
  });

  it('502 with the longest Retry-After rounded up to whole seconds when every upstream failed', async () => {
    const p = withFailover(ups, async (u) => ({ ok: false, verdict: { kind: 'retryable', status: 429, message: 'x', retryAfterSeconds: u.name === 'a' ? 1.5 : 0.2 } }));
    await expect(p).rejects.toMatchObject({ status: 502, headers: { 'retry-after': '2' } });
  });

  it('caps the Retry-After passed on at 60 s, whatever an upstream asked (seconds or a date years ahead)', async () => {
    for (const wait of [999_999_999, 1e21, 3 * 365 * 86_400, 61]) {
      const p = withFailover(ups, async () => ({ ok: false, verdict: { kind: 'retryable', status: 429, message: 'x', retryAfterSeconds: wait } }));
      await expect(p).rejects.toMatchObject({ status: 502, headers: { 'retry-after': '60' } });
    }
  });

  it('passes on no Retry-After for a wait that is not a positive finite number', async () => {
    for (const wait of [Number.NaN, Number.POSITIVE_INFINITY, -5, 0]) {
      const err = await withFailover(ups, async () => ({ ok: false, verdict: { kind: 'retryable', status: 503, message: 'x', retryAfterSeconds: wait } })).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 502 });
      expect((err as { headers: Record<string, string> }).headers['retry-after']).toBeUndefined();
    }
  });

  it('504 when the last failure was a timeout, 503 when nothing could be reached', async () => {
    await expect(withFailover(ups, async () => { throw new TransportError('timeout', 't', true); })).rejects.toMatchObject({ status: 504 });
    await expect(withFailover(ups, async () => { throw new TransportError('connect', 'c', false); })).rejects.toMatchObject({ status: 503 });
    await expect(withFailover([], async () => ({ ok: true, value: 1 }))).rejects.toMatchObject({ status: 503 });
  });

  it('reports maybe-sent timeouts and opens circuits after repeated failures', async () => {
    const circuits = new CircuitBreaker(2, 60_000);
    const maybe: string[] = [];
    for (let i = 0; i < 2; i++)
      await withFailover([up('a')], async () => { throw new TransportError('timeout', 't', true); }, { circuits, onMaybeSent: (u) => void maybe.push(u.name) }).catch(() => undefined);
    expect(maybe).toEqual(['a', 'a']);
    expect(circuits.isOpen('a')).toBe(true);
  });

  it('an answer over the read cap (the request asked for that much) tries the next upstream but opens no circuit', async () => {
    const circuits = new CircuitBreaker(2, 60_000);
    const tried: string[] = [];
    for (let i = 0; i < 4; i++) {
      const err = await withFailover(
        [up('a'), up('b')],
        async (u) => {
          tried.push(u.name);
          throw new TransportError('too_large', 'upstream answer over 3145728 bytes', true);
        },
        { circuits },
      ).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 502, code: 'upstream_answer_too_large' });
    }
    expect(tried).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
    expect(circuits.isOpen('a')).toBe(false);
    expect(circuits.isOpen('b')).toBe(false);
  });

  it("a verdict's clientMessage is the final 502's message when that failure was the last; sparesCircuit opens no circuit", async () => {
    const circuits = new CircuitBreaker(2, 60_000);
    const mismatch = { kind: 'retryable', status: 502, message: 'Upstream X said: secret', clientMessage: 'vector length did not match', sparesCircuit: true } as const;
    for (let i = 0; i < 3; i++)
      await expect(withFailover(ups, async () => ({ ok: false, verdict: mismatch }), { circuits })).rejects.toMatchObject({ status: 502, code: 'upstream_error', message: 'vector length did not match' });
    expect(circuits.failuresOf('a')).toBe(0);
    // A later failure without one (here an upstream 500) leaves the generic text.
    const p = withFailover(ups, async (u) => ({ ok: false, verdict: u.name === 'a' ? mismatch : { kind: 'retryable', status: 500, message: 'x' } }));
    await expect(p).rejects.toMatchObject({ status: 502, message: 'Every upstream for this model failed; try again shortly.' });
  });
});
