import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { parseLossless } from '../../src/core/lossless-json.js';
import { reportedSeconds } from '../../src/video/duration.js';
import { readResult } from '../../src/video/vendors/fal/poll.js';
import { actualSeconds as seedanceSeconds } from '../../src/video/vendors/seedance/response.js';
import { actualSeconds as wanSeconds } from '../../src/video/vendors/wan/response.js';

/**
 * A vendor's duration of more digits than a double holds reaches the adapters as a marker string
 * (core/lossless-json.ts), since video answers are parsed keeping such numbers exactly. Billing reads
 * it as the number it holds, not as a missing figure (which bills the held length instead).
 */
const parsed = (text: string) => parseLossless(text) as JsonObject;

describe('durations of more digits than a double holds', () => {
  it('are read as their number by the shared reader; one that cannot be a duration is still none', () => {
    const v = parsed('{"a":4.00000000000000000001,"b":2.50000000000000000001,"c":1e400,"d":-0,"e":-2.50000000000000000001}');
    expect(reportedSeconds(v.a)).toBe(4);
    expect(reportedSeconds(v.b)).toBe(2.5);
    expect(reportedSeconds(v.c)).toBeUndefined();
    expect(reportedSeconds(v.d)).toBeUndefined();
    expect(reportedSeconds(v.e)).toBeUndefined();
  });

  it('fal: a file duration, frames over fps, and a top-level duration', () => {
    const file = readResult(parsed('{"video":{"url":"https://v.example/a.mp4","duration":2.50000000000000000001}}'), 8);
    expect(file).toMatchObject({ state: 'completed', seconds: 2.5, billableSeconds: 2.5 });
    const frames = readResult(parsed('{"video":{"url":"https://v.example/a.mp4","num_frames":120.000000000000000000001,"fps":24.0000000000000000001}}'), 8);
    expect(frames).toMatchObject({ seconds: 5, billableSeconds: 5 });
    const top = readResult(parsed('{"video":{"url":"https://v.example/a.mp4"},"duration":3.00000000000000000001}'), 8);
    expect(top).toMatchObject({ seconds: 3 });
  });

  it('seedance: duration, and frames over framespersecond', () => {
    expect(seedanceSeconds(parsed('{"duration":2.50000000000000000001}'), 10)).toBe(2.5);
    expect(seedanceSeconds(parsed('{"frames":121.000000000000000000001,"framespersecond":24.2000000000000000001,"duration":10}'), 10)).toBe(5);
  });

  it('wan: the output duration, and the total less the input video', () => {
    expect(wanSeconds(parsed('{"output_video_duration":2.50000000000000000001}'), 10)).toBe(2.5);
    expect(wanSeconds(parsed('{"duration":8.00000000000000000001,"input_video_duration":3.00000000000000000001}'), 10)).toBe(5);
  });
});
