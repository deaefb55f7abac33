import { describe, expect, it } from 'vitest';
import { ReceiverSlots, slotOf } from '../../src/webhooks/receiver-slots.js';

/**
 * The per-instance bookkeeping of receivers that do not answer: an account can name a new receiver
 * per job, so what is remembered of failing receivers must stay bounded, and the caps and back-off
 * must hold per account and per receiver.
 */
describe('ReceiverSlots', () => {
  it('caps deliveries per account and per receiver, and gives slots back', () => {
    const slots = new ReceiverSlots(2, 3);
    const a = slotOf('acct_a', 'https://hooks.example/x');
    expect(slots.hasRoom(a)).toBe(true);
    slots.take(a);
    slots.take(a);
    expect(slots.hasRoom(a)).toBe(false); // the account's 2
    const others = ['acct_b', 'acct_c', 'acct_d'].map((acct) => slotOf(acct, 'https://hooks.example:443/y'));
    slots.take(others[0]!);
    expect(slots.hasRoom(others[1]!)).toBe(false); // the receiver's 3 (a's two and b's one)
    slots.give(a);
    expect(slots.hasRoom(others[1]!)).toBe(true);
    expect(slots.busyAccounts).toBe(2);
  });

  it('backs off a receiver after 3 unanswered deliveries in a row, and any answer clears it', () => {
    const slots = new ReceiverSlots(2, 4);
    const s = slotOf('acct_a', 'https://blackhole.example/');
    const t0 = 1_000_000;
    for (let i = 0; i < 2; i++) slots.note(s, false, true, t0);
    expect(slots.pausedUntil(s, t0)).toBeUndefined();
    slots.note(s, false, true, t0);
    expect(slots.pausedUntil(s, t0)).toBe(t0 + 30_000);
    // A fourth doubles the pause.
    slots.note(s, false, true, t0);
    expect(slots.pausedUntil(s, t0)).toBe(t0 + 60_000);
    // After the pause: one at a time, for that account and for the receiver as a whole.
    slots.take(s);
    expect(slots.hasRoom(s)).toBe(false);
    expect(slots.hasRoom(slotOf('acct_b', 'https://blackhole.example/'))).toBe(false);
    slots.give(s);
    slots.note(s, true, false, t0);
    expect(slots.pausedUntil(s, t0)).toBeUndefined();
  });

  it('remembers at most 10,000 failing receivers: one account naming a new one per job cannot grow it without end', () => {
    const slots = new ReceiverSlots(2, 4);
    const t0 = 1_000_000;
    for (let i = 0; i < 25_000; i++) slots.note(slotOf('acct_a', `https://r${i}.example/`), false, true, t0);
    const inner = slots as unknown as { originStreak: Map<string, number>; pauses: Map<string, unknown> };
    expect(inner.originStreak.size).toBe(10_000);
    expect(inner.pauses.size).toBe(10_000);
    // The newest are the ones kept.
    expect(inner.originStreak.has('r24999.example:443')).toBe(true);
    expect(inner.originStreak.has('r0.example:443')).toBe(false);
  });
});
