import { describe, expect, it } from 'vitest';
import { RecentKeys } from '../../src/core/recent-keys.js';

describe('RecentKeys', () => {
  it('reports a key as seen again only within its window of the previous sighting', () => {
    const r = new RecentKeys(1_000);
    expect(r.seenAgain('job-a', 0)).toBe(false);
    expect(r.seenAgain('job-a', 999)).toBe(true);
    // Each sighting restarts the window.
    expect(r.seenAgain('job-a', 1_998)).toBe(true);
    expect(r.seenAgain('job-a', 2_998)).toBe(false);
    expect(r.seenAgain('job-b', 2_999)).toBe(false);
  });

  it('keeps keys apart: thousands of distinct keys are each new the first time', () => {
    const r = new RecentKeys(60_000, 1 << 16);
    let reportedSeen = 0;
    for (let i = 0; i < 2_000; i++) if (r.seenAgain(`video_${i}`, i)) reportedSeen++;
    // Only a collision of two keys' full 32-bit hashes could report one; none among these.
    expect(reportedSeen).toBe(0);
    let again = 0;
    for (let i = 0; i < 2_000; i++) if (r.seenAgain(`video_${i}`, 3_000 + i)) again++;
    // A slot holds the last key hashed to it: most keys are still there (2,000 keys in 65,536 slots).
    expect(again).toBeGreaterThan(1_900);
  });

  it('holds the latest key of each slot, however many keys came before', () => {
    const r = new RecentKeys(1_000, 100);
    for (let i = 0; i < 10_000; i++) r.seenAgain(`k${i}`, i);
    // The last key seen in a slot of 128 is remembered; an old one has long been overwritten or expired.
    expect(r.seenAgain('k9999', 10_000)).toBe(true);
    expect(r.seenAgain('k0', 10_001)).toBe(false);
  });
});
