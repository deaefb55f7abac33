import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { buildWanBody } from '../../../src/video/vendors/wan/request.js';
import { measureLinear } from '../../helpers/linear-time.js';
import { input } from '../../kit/wan.js';

/**
 * Every top-level field a client sends to a Wan model is merged into `input` or `parameters`. A
 * merge that copied the whole accumulated object per field made this quadratic: 8000 fields (95 KB)
 * held the event loop 11.7 s, and a 5.9 MB body of 500k fields (under the body limit) for minutes.
 */
function wideNatives(n: number): JsonObject {
  const native: JsonObject = {};
  // Every fourth name is an input-side one, so both objects grow.
  for (let i = 0; i < n; i++) native[i % 4 === 0 ? `k${i}_url` : `k${i}`] = i;
  return native;
}

describe('wan create body for many native fields', () => {
  it('takes time linear in the number of top-level fields', () => {
    const { linear, detail } = measureLinear(128, (n) => input('wan2.6-t2v', {}, wideNatives(n)), (ci) => void buildWanBody(ci));
    expect(linear, detail).toBe(true);
  });

  it('places every field, on both sides', () => {
    const body = buildWanBody(input('wan2.6-t2v', {}, wideNatives(1000)));
    expect(Object.keys(body.input as JsonObject)).toHaveLength(1 + 250);
    expect(Object.keys(body.parameters as JsonObject)).toHaveLength(750);
    expect((body.input as JsonObject).k996_url).toBe(996);
    expect((body.parameters as JsonObject).k999).toBe(999);
  });

  it('merges mixed natives as before: top-level names win, objects merge recursively, media is appended', () => {
    const native: JsonObject = {
      input: { negative_prompt: 'nested', extra_input: { a: 1, keep: true }, media: [{ type: 'reference_image', url: 'https://m/1' }] },
      parameters: { seed: 1, watermark: false, extra: { deep: { x: 1 }, keep: 'p' } },
      seed: 7,
      extra: { deep: { y: 2 } },
      negative_prompt: 'top',
      style_ref_url: 'https://s',
      media: [{ type: 'reference_image', url: 'https://m/2' }],
      duration: 10,
      prompt_extend: false,
    };
    const before = structuredClone(native);
    const body = buildWanBody(input('wan2.6-t2v', { seconds: 5, size: { width: 1280, height: 720 }, sent: { size: true, resolution: false, aspectRatio: false } }, native));
    expect(body).toEqual({
      model: 'wan2.6-t2v',
      input: {
        prompt: 'a red fox runs through snow',
        negative_prompt: 'top',
        extra_input: { a: 1, keep: true },
        style_ref_url: 'https://s',
        media: [
          { type: 'reference_image', url: 'https://m/1' },
          { type: 'reference_image', url: 'https://m/2' },
        ],
      },
      parameters: { size: '1280*720', duration: 10, seed: 7, watermark: false, extra: { deep: { x: 1, y: 2 }, keep: 'p' }, prompt_extend: false },
    });
    // Derived names keep their places; natives follow in the order they were written.
    expect(Object.keys(body.input as JsonObject)).toEqual(['prompt', 'negative_prompt', 'extra_input', 'style_ref_url', 'media']);
    expect(Object.keys(body.parameters as JsonObject)).toEqual(['size', 'duration', 'seed', 'watermark', 'extra', 'prompt_extend']);
    // The client's own objects are read, never written.
    expect(native).toEqual(before);
  });

  it('appends a media array of any length (a spread into push overflowed the stack: a 500)', () => {
    const media = Array.from({ length: 500_000 }, (_, i) => ({ type: 'reference_image', url: `https://m/${i}` }));
    const body = buildWanBody(input('wan2.7-r2v', {}, { media, input: { media: media.slice(0, 3) } }));
    const sent = (body.input as JsonObject).media as JsonObject[];
    expect(sent).toHaveLength(500_003);
    expect(sent[3]).toEqual({ type: 'reference_image', url: 'https://m/0' });
  });
});
