import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import type { DeriveInput, TaskRef } from '../../../src/video/types.js';
import { soraVendor as v } from '../../../src/video/vendors/sora/adapter.js';
import { extensionSeconds } from '../../../src/video/vendors/sora/derive.js';
import { jsonResponse, makeUpstream } from '../../kit/video.js';

/** The Sora adapter's edits, extensions and characters: requests built, answers read (no I/O). */
const up = makeUpstream();
const source: TaskRef = { taskId: 'video_src/1', model: 'sora-2', upstreamModel: 'sora-2', meta: { seconds: 4 } };
const input = (over: Partial<DeriveInput> = {}): DeriveInput => ({ model: 'sora-2', upstreamModel: 'sora-2', prompt: 'on', source: { task: source }, ...over });

describe('sora edits and extensions', () => {
  it('names a finished task by its id in JSON, and sends an upload as the multipart file `video`', () => {
    const edit = v.derive!.edit!(input(), up);
    expect(edit).toMatchObject({ method: 'POST', url: `${up.baseUrl}/v1/videos/edits`, body: { prompt: 'on', video: { id: 'video_src/1' } } });
    expect(edit.headers['Content-Type']).toBe('application/json');
    const ext = v.derive!.extend!(input({ seconds: 8, source: { file: { data: Buffer.from('MP4BYTES'), mimeType: 'video/mp4', filename: 'x' } } }), up);
    expect(ext.url).toBe(`${up.baseUrl}/v1/videos/extensions`);
    expect(ext.headers['Content-Type']).toMatch(/^multipart\/form-data; boundary=/);
    const text = (ext.body as Buffer).toString('latin1');
    expect(text).toContain('name="seconds"\r\n\r\n8\r\n');
    expect(text).toContain('name="video"; filename="video.mp4"\r\nContent-Type: video/mp4\r\n\r\nMP4BYTES\r\n');
  });

  it('refuses an extension length outside 4-20 in steps of 4', () => {
    for (const s of [4, 8, 12, 16, 20]) expect(() => v.derive!.validate!('extend', { model: 'sora-2', prompt: 'x', seconds: s })).not.toThrow();
    for (const s of [1, 5, 24, undefined]) expect(() => v.derive!.validate!('extend', { model: 'sora-2', prompt: 'x', seconds: s })).toThrow(GatewayError);
  });

  it('an extension is billed the reported total less the source, shown whole', () => {
    const parsed = v.derive!.parse('extend', jsonResponse(200, { id: 'video_new', status: 'queued' }), input({ seconds: 8, sourceSeconds: 4 }), up);
    expect(parsed).toEqual({ taskId: 'video_new', meta: { op: 'extend', seconds: 8, source_seconds: 4 }, vendorData: { id: 'video_new', status: 'queued' } });
    const task: TaskRef = { taskId: 'video_new', model: 'sora-2', upstreamModel: 'sora-2', meta: parsed.meta! };
    const done = v.parsePoll(jsonResponse(200, { id: 'video_new', status: 'completed', seconds: '11.5' }), task, up);
    expect(done).toMatchObject({ state: 'completed', seconds: 11.5, billableSeconds: 7.5, sourceSeconds: 4 });
    // Without the source's length, the segment asked for; without a total, the source plus that.
    expect(extensionSeconds('12', { seconds: 8 })).toEqual({ seconds: 12, billableSeconds: 8, sourceSeconds: 4 });
    expect(extensionSeconds(undefined, { seconds: 8, source_seconds: 4 })).toEqual({ seconds: 12, billableSeconds: 8, sourceSeconds: 4 });
    // A total shorter than the source says nothing of the segment but bounds it: no segment outlasts its video.
    expect(extensionSeconds('3', { seconds: 8, source_seconds: 4 })).toEqual({ seconds: 3, billableSeconds: 3, sourceSeconds: 0 });
    expect(extensionSeconds('6', { seconds: 8, source_seconds: 8 })).toEqual({ seconds: 6, billableSeconds: 6, sourceSeconds: 0 });
  });

  it('an edit keeps the source length as its fallback', () => {
    const parsed = v.derive!.parse('edit', jsonResponse(200, { id: 'video_e' }), input({ sourceSeconds: 4 }), up);
    expect(parsed.meta).toEqual({ op: 'edit', seconds: 4 });
    expect(() => v.derive!.parse('edit', jsonResponse(200, {}), input(), up)).toThrow(GatewayError);
  });
});

describe('sora characters', () => {
  it('creates from a form, reads by id, and keeps the id apart from the rest', () => {
    const req = v.characters!.create({ name: 'Luna', video: { data: Buffer.from('V'), mimeType: 'video/quicktime', filename: 'x' } }, up);
    expect(req.url).toBe(`${up.baseUrl}/v1/videos/characters`);
    expect((req.body as Buffer).toString('latin1')).toContain('filename="character.mov"');
    expect(v.characters!.get('char_1/2', up).url).toBe(`${up.baseUrl}/v1/videos/characters/char_1%2F2`);
    const c = v.characters!.parse(jsonResponse(200, { id: 'char_1', name: 'Luna', created_at: 1700000000, extra: 1 }));
    expect(c).toEqual({ id: 'char_1', name: 'Luna', createdAt: 1700000000, vendorData: { extra: 1 } });
    expect(() => v.characters!.parse(jsonResponse(200, { name: 'x' }))).toThrow(GatewayError);
  });
});
