import { describe, expect, it } from 'vitest';
import { UpstreamRedactor } from '../../src/core/redact.js';

/**
 * Redaction of a text dense with escapes, as a hostile upstream answers it: linear time is not
 * enough (redact-linear.test.ts), each escape must cost little too. Every escape of a decoded view is
 * checked for a credential it reaches into (redact-straddle.ts); that check built and folded 16
 * strings per escape, and a poll answer of 1 MB of "&#x41;" took ~0.5 s of the event loop to redact.
 * It now costs a map lookup per escape where no credential's first or last characters are.
 *
 * CPU time of this process (not the wall clock), fastest of a few runs.
 */
const MAX_MS = 250;
const SIZE = 1024 * 1024;

const redactor = new UpstreamRedactor(['sk-upstreamSECRETabcdef0123456789XYZ', 'pass word%41&amp;x/y\\'], ['mycorp.example.com'], ['myres']);

function cpuMs(run: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const start = process.cpuUsage();
    run();
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

describe('redaction of a megabyte of escapes', () => {
  it.each(['&#x41;', '&#65;', '&amp;', '%41', '%2541', '%4C', '\\u0041', '\\u004c', '\\x41', '&#x63;%32\\u0073'])('of %j repeated', (unit) => {
    const text = unit.repeat(Math.ceil(SIZE / unit.length));
    const own = cpuMs(() => redactor.ownCredentials(text));
    const all = cpuMs(() => redactor.text(text));
    console.log(`redaction of 1 MiB of ${JSON.stringify(unit)}: ${own.toFixed(1)} ms (own credentials), ${all.toFixed(1)} ms (all)`);
    expect(own).toBeLessThan(MAX_MS);
    expect(all).toBeLessThan(MAX_MS);
  });

  it('still finds a credential an escape reaches into, among them', () => {
    const b64 = Buffer.from('sk-upstreamSECRETabcdef0123456789XYZ').toString('base64');
    // "%6" completed by the first character of the base64 form (its "c") reads as one escape.
    const text = `${'&#x41;'.repeat(1000)} %6${b64} ${'%41'.repeat(1000)}`;
    expect(redactor.text(text)).not.toContain(b64.slice(1, 20));
  });
});
