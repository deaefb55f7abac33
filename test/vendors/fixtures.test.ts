import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import type { UpstreamResponse } from '../../src/http/types.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import type { TaskRef } from '../../src/video/types.js';
import { videoCases } from './video-cases.js';
import { embeddingCases } from './embedding-cases.js';

/**
 * One table over both registries and the documented examples in fixtures/vendors/: every documented
 * status maps to the job state the documentation gives it, a status the documentation does not list
 * keeps the job processing, every documented error kind gets its verdict, task ids are percent-encoded
 * in URLs, and the request built for a documented example carries the documented fields.
 */
const ROOT = join(import.meta.dirname, '../../fixtures/vendors');

type Obj = Record<string, any>;
const read = (feature: string, id: string, file: string): Obj => JSON.parse(readFileSync(join(ROOT, feature, id, file), 'utf8'));

/** `error.<http status>.<code>.json` files of a vendor folder. */
function errorFixtures(feature: string, id: string): { file: string; status: number; code: string; body: Obj }[] {
  return readdirSync(join(ROOT, feature, id))
    .map((f) => /^error\.(\d{3})\.(.+)\.json$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ file: m[0], status: Number(m[1]), code: m[2]!, body: read(feature, id, m[0]) }));
}

function answer(status: number, json: unknown, headers: Record<string, string> = {}): UpstreamResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, json: json as never, text: JSON.stringify(json) };
}

const ODD_ID = 'task/../a?b=c#d e%';

describe('every registered vendor has documented fixtures and a row in this table', () => {
  const video = videoCases((id, file) => read('video', id, file));
  it.each(videoModules.map((m) => m.vendor.id))('video %s', (id) => {
    expect(existsSync(join(ROOT, 'video', id, 'SOURCES.md'))).toBe(true);
    expect(existsSync(join(ROOT, 'video', id, 'create.request.json'))).toBe(true);
    expect(video[id], `no fixture case for video vendor ${id}`).toBeDefined();
  });
  it.each(embeddingModules.map((m) => m.id))('embeddings %s', (id) => {
    expect(existsSync(join(ROOT, 'embeddings', id, 'SOURCES.md'))).toBe(true);
    expect(existsSync(join(ROOT, 'embeddings', id, 'request.json'))).toBe(true);
    expect(embeddingCases[id], `no fixture case for embeddings vendor ${id}`).toBeDefined();
  });
});

const cases = videoCases((id, file) => read('video', id, file));

describe.each(videoModules.map((m) => [m.vendor.id, m] as const))('video vendor %s on its documented examples', (id, mod) => {
  const vendor = mod.vendor;
  const c = cases[id]!;
  const createDocs = readdirSync(join(ROOT, 'video', id)).filter((f) => /^create\.request(\..+)?\.json$/.test(f));
  const input = c.input(read('video', id, 'create.request.json'));
  const task = (taskId: string): TaskRef => ({ taskId, model: input.model, upstreamModel: input.upstreamModel, meta: {} });

  it.each(createDocs)('%s: the create request built for the documented example carries every documented field', (file) => {
    const doc = read('video', id, file);
    const req = vendor.buildCreate(c.input(doc), c.upstream);
    const body = typeof req.body === 'string' ? JSON.parse(req.body) : req.body;
    expect(req.method).toBe('POST');
    expect(body).toMatchObject(doc);
    if (c.sameKeys) expect(Object.keys(c.sameKeys(body) as object).sort()).toEqual(Object.keys(c.sameKeys(doc) as object).sort());
  });

  it('reads the task id from the documented create answer', () => {
    const created = read('video', id, 'create.response.json');
    const ref = vendor.parseCreate(answer(200, created), input, c.upstream);
    expect(ref.taskId).toBe(c.createdTaskId(created));
  });

  const statuses = Object.entries(c.states);
  it.each(statuses)('documented status %s -> %s', (status, expected) => {
    const out = vendor.parsePoll(answer(200, c.pollWith(status)), task('task-1'), c.upstream);
    if (expected === 'next') expect(out).toHaveProperty('next');
    else expect(out).toMatchObject({ state: expected });
  });

  it('every status value the documentation lists has an expectation here', () => {
    const file = join(ROOT, 'video', id, 'statuses.json');
    if (!existsSync(file)) return;
    expect(Object.keys(c.states).sort()).toEqual([...(read('video', id, 'statuses.json').values as string[])].sort());
  });

  it('a status the documentation does not list keeps the job processing', () => {
    const status = Object.keys(c.states)[0]!;
    const body = JSON.parse(JSON.stringify(c.pollWith(status)).replace(`"${status}"`, '"SOMETHING_NEW"'));
    if (id === 'veo') return; // Veo has no status field: an operation without `done` is the running case above.
    expect(vendor.parsePoll(answer(200, body), task('task-1'), c.upstream)).toMatchObject({ state: 'processing' });
  });

  const errs = errorFixtures('video', id);
  it.each(errs.map((e) => [e.file, e] as const))('%s gets the documented verdict', (_file, e) => {
    const expected = c.errors[e.code] ?? c.errors[e.code.split('.')[0]!];
    expect(expected, `no expectation for ${e.code}`).toBeDefined();
    expect(vendor.classifyError(answer(e.status, e.body, c.errorHeaders?.(e.code)))).toMatchObject({ kind: expected });
  });

  it('percent-encodes the task id in every URL it builds', () => {
    const polled = vendor.buildPoll(task(ODD_ID), c.upstream);
    const urls = [polled.url, vendor.buildCancel?.(task(ODD_ID), c.upstream).url].filter((u): u is string => !!u);
    for (const url of urls) {
      expect(url).not.toContain(ODD_ID);
      if (id === 'veo') expect((polled.body as JsonObject).operationName).toBe(ODD_ID); // the id travels in the body
      else expect(url).toContain(encodeURIComponent(ODD_ID));
    }
  });
});

describe.each(embeddingModules.map((m) => [m.id, m] as const))('embeddings vendor %s on its documented examples', (id, mod) => {
  const vendor = mod.vendor;
  const c = embeddingCases[id]!;

  it.each(c.examples.map((e) => [e.request, e] as const))('%s: the request carries every documented field; the documented answer parses', (_f, e) => {
    const doc = read('embeddings', id, e.request);
    const ctx = e.context(doc);
    const built = vendor.build({ offset: 0, inputs: ctx.req.inputs, tokens: ctx.req.inputs.map(() => 1) }, ctx);
    const body = typeof built.request.body === 'string' ? JSON.parse(built.request.body) : built.request.body;
    expect(body).toMatchObject(e.documented?.(doc) ?? doc);
    if (e.url) expect(built.request.url).toBe(e.url);
    if (e.response) {
      const parsed = vendor.parse(answer(200, e.answer?.(read('embeddings', id, e.response)) ?? read('embeddings', id, e.response)), { offset: 0, inputs: ctx.req.inputs, tokens: [1] }, ctx);
      expect(parsed).toEqual(e.parsed);
    }
  });

  const errs = errorFixtures('embeddings', id);
  it.each(errs.map((e) => [e.file, e] as const))('%s gets the documented verdict', (_file, e) => {
    const expected = c.errors[e.code];
    expect(expected, `no expectation for ${e.code}`).toBeDefined();
    expect(vendor.classifyError(answer(e.status, e.body, c.errorHeaders?.(e.code)))).toMatchObject({ kind: expected });
  });
});
