import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_MP4_STEPS, readMp4Header } from '../../src/core/mp4-header.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { checkVideoUpload } from '../../src/video/video-upload.js';
import { bareTracksMp4, box, fragmentedMp4, freeBoxes, topLevel, u32, withLyingMovieHeader } from '../helpers/mp4-boxes.js';

describe('readMp4Header on hostile nesting', () => {
  it('4,000 nested moov boxes (32 KB) are read in bounded stack: no throw, no length', () => {
    let nested = box('moov');
    for (let i = 0; i < 4_000; i++) nested = box('moov', nested);
    expect(nested.length).toBeLessThan(40_000);
    expect(() => readMp4Header(nested)).not.toThrow();
    expect(readMp4Header(nested).seconds).toBeUndefined();
    expect(readMp4Header(nested).unread).toMatch(/nest more than 16 deep/);
  });

  it('a real file still reads at its real depth', () => {
    expect(readMp4Header(sampleMp4()).seconds).toBeGreaterThan(0);
  });
});

const dir = mkdtempSync(join(tmpdir(), 'mp4-header-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A test-pattern clip from the encoder, with the given muxer flags. */
function encode(name: string, seconds: number, fps: number, movflags?: string, sound = false): Buffer {
  const out = join(dir, name);
  const args = ['-v', 'error', '-y', '-f', 'lavfi', '-i', `testsrc=duration=${seconds}:size=64x64:rate=${fps}`];
  if (sound) args.push('-f', 'lavfi', '-i', `sine=duration=${seconds}`, '-c:a', 'aac');
  execFileSync('ffmpeg', [...args, ...(movflags ? ['-movflags', movflags] : []), out]);
  return readFileSync(out);
}

const LIMITS = { maxBytes: 50 * 1024 * 1024, maxSeconds: 60 };

describe('readMp4Header on encoders\' files', () => {
  it('a plain MP4 reads its length', () => {
    expect(readMp4Header(encode('plain.mp4', 10, 24))).toMatchObject({ seconds: 10, width: 64, height: 64 });
  });

  it('a fragmented MP4 with a fragment per frame (about 4,200 boxes) reads all its fragments', () => {
    const file = encode('per-frame.mp4', 10, 60, 'frag_every_frame+empty_moov+default_base_moof');
    expect(topLevel(file).length).toBeGreaterThan(1_200);
    const head = readMp4Header(file);
    expect(head.unread).toBeUndefined();
    expect(head.seconds).toBe(10);
  });

  it('a video and a sound track with their own IDs, plain and fragmented, read their length whole', () => {
    for (const movflags of [undefined, 'frag_keyframe+empty_moov+default_base_moof']) {
      const head = readMp4Header(encode('with-sound.mp4', 10, 24, movflags, true));
      expect(head).toMatchObject({ seconds: 10, width: 64, height: 64 });
      expect(head.unread).toBeUndefined();
    }
  });

  it('20 s of fragments under a movie header of 1 tick and 4,200 free boxes after the moov read 20 s', () => {
    const honest = encode('fragmented.mp4', 20, 10, 'frag_keyframe+empty_moov+default_base_moof');
    const file = withLyingMovieHeader(honest, 1, freeBoxes(4_200));
    expect(readMp4Header(file)).toMatchObject({ seconds: 20, width: 64, height: 64 });
    expect(checkVideoUpload(file, 'video', LIMITS).seconds).toBe(20);
  });
});

describe('readMp4Header on fragments it cannot be talked out of', () => {
  it('more boxes than the walk reads: reported unread, and the upload refused 400 invalid_media', () => {
    const file = fragmentedMp4(1, 20, { afterMoov: freeBoxes(MAX_MP4_STEPS) });
    expect(readMp4Header(file).unread).toMatch(/more than 131072 boxes/);
    expect(() => checkVideoUpload(file, 'video', LIMITS)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_media', param: 'video' }));
  });

  it('samples in the sample table and in fragments add up: 2 s + 10 s is 12 s', () => {
    expect(readMp4Header(fragmentedMp4(1, 10, { tableSamples: 48 })).seconds).toBe(12);
  });

  it('a sound track sharing the video track\'s ID does not take its fragments away', () => {
    expect(readMp4Header(fragmentedMp4(1, 20, { soundTrackIds: [1] })).seconds).toBe(20);
  });

  it('fragments naming no track of the movie: unread', () => {
    expect(readMp4Header(fragmentedMp4(1, 20, { fragmentTrack: 7 })).unread).toMatch(/names no track/);
  });

  it('frames timed at nothing under a 1-tick header: unread, not 0.001 s', () => {
    expect(readMp4Header(fragmentedMp4(1, 20, { sampleTicks: 0 })).unread).toMatch(/frames last under 1 ms/);
  });

  it('a run claiming more samples than its box holds: unread', () => {
    const file = fragmentedMp4(1, 2);
    // The last run's sample count (24) becomes 1,000; the bytes after it are its mdat.
    file.writeUInt32BE(1_000, file.lastIndexOf(Buffer.from('trun')) + 8);
    expect(readMp4Header(file).unread).toMatch(/more samples than it holds/);
  });

  it('a box smaller than its own header before the fragments: unread', () => {
    const file = fragmentedMp4(1, 20, { afterMoov: [u32(4), Buffer.from('free')] });
    expect(readMp4Header(file).unread).toMatch(/'free' box is smaller than its header/);
  });

  it('a last fragment cut short (its size past the end of the file) still counts its run', () => {
    const file = fragmentedMp4(1, 20);
    const moofs = topLevel(file).filter((b) => b.type === 'moof');
    const last = moofs[moofs.length - 1]!;
    file.writeUInt32BE(last.end - last.start + 4_096, last.start);
    expect(readMp4Header(file)).toMatchObject({ seconds: 20 });
    expect(readMp4Header(file).unread).toBeUndefined();
  });
});

describe('readMp4Header on tracks no movie holds', () => {
  it('59,000 tracks sharing track ID 1 and 13,000 runs of it (6 MB): unread and refused, within 500 ms', () => {
    const file = bareTracksMp4(Array<number>(59_000).fill(1), 13_000);
    expect(file.length).toBeGreaterThan(6_000_000);
    const t = performance.now();
    expect(readMp4Header(file).unread).toMatch(/more than 4 tracks share track ID 1/);
    expect(performance.now() - t).toBeLessThan(500);
    expect(() => checkVideoUpload(file, 'video', LIMITS)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_media', param: 'video' }));
  });

  it('up to 4 tracks sharing an ID each count its fragments; a fifth makes the file unread', () => {
    const four = readMp4Header(fragmentedMp4(1, 20, { soundTrackIds: [1, 1, 1] }));
    expect(four).toMatchObject({ seconds: 20 });
    expect(four.unread).toBeUndefined();
    expect(readMp4Header(fragmentedMp4(1, 20, { soundTrackIds: [1, 1, 1, 1] })).unread).toMatch(/more than 4 tracks share track ID 1/);
  });

  it('a run pays a step for every track of its ID: 4 tracks and 40,000 runs are more than the walk reads', () => {
    expect(readMp4Header(bareTracksMp4([1, 1, 1, 1], 30_000)).unread).toBeUndefined();
    expect(readMp4Header(bareTracksMp4([1, 1, 1, 1], 40_000)).unread).toMatch(/more than 131072 boxes/);
  });

  it('a track with two headers naming two IDs: unread', () => {
    const tkhd = (id: number): Buffer => box('tkhd', u32(0, 0, 0, id, 0, 1000), Buffer.alloc(60));
    const file = box('moov', box('mvhd', u32(0, 0, 0, 1000, 1000), Buffer.alloc(80)), box('trak', tkhd(1), tkhd(2)));
    expect(readMp4Header(file).unread).toMatch(/more than one header/);
  });

  it('more than 1,024 tracks, each with its own ID: unread, within 500 ms', () => {
    expect(readMp4Header(bareTracksMp4(Array.from({ length: 1_024 }, (_, i) => i + 1), 0)).unread).toBeUndefined();
    const file = bareTracksMp4(Array.from({ length: 60_000 }, (_, i) => i + 1), 10_000);
    const t = performance.now();
    expect(readMp4Header(file).unread).toMatch(/more than 1024 tracks/);
    expect(performance.now() - t).toBeLessThan(500);
  });
});
