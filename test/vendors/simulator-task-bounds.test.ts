import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { DEFAULT_TASK_LIMITS, TaskBook, type SimTask } from '../../src/sim/tasks.js';
import { startSeedanceSimulator } from '../../src/video/vendors/seedance/simulator.js';
import { startFalSim } from '../../src/video/vendors/fal/simulator.js';
import { videoModules } from '../../src/video/vendors/registry.js';

/**
 * The video simulators run inside the embedded default's gateway process, so what they keep is the
 * gateway's memory. They used to keep every task for ever, Seedance's and fal's with the whole
 * request body: ten Seedance creates padded with 5 MB each grew the demo's heap by 50 MB for good.
 * A task now keeps only the request fields its simulator answers from, and the book forgets the
 * oldest tasks past a count or an age; a forgotten task is unknown, in the vendor's own words.
 */
const MB = 1024 * 1024;
const sims: SimServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

/** Every task the book still knows of, among `ids`. */
const known = (book: TaskBook, ids: string[]): string[] => ids.filter((id) => book.get(id) !== undefined);

describe('TaskBook', () => {
  it('keeps at most maxTasks, forgetting the oldest first and telling its owner', () => {
    const forgotten: string[] = [];
    const book = new TaskBook({ maxTasks: 3 }, (t: SimTask) => forgotten.push(t.id));
    const ids = Array.from({ length: 5 }, (_, i) => book.create({ id: `t${i}`, prompt: '', seconds: 5, durationMs: 0 }).id);
    expect(book.size).toBe(3);
    expect(known(book, ids)).toEqual(['t2', 't3', 't4']);
    expect(forgotten).toEqual(['t0', 't1']);
  });

  it('forgets a task maxAgeMs after its create, whether it is asked for or pushed out', () => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
    const book = new TaskBook({ maxAgeMs: 60_000 });
    book.create({ id: 'old', prompt: '', seconds: 5, durationMs: 0 });
    book.create({ id: 'older-asked', prompt: '', seconds: 5, durationMs: 0 });
    vi.advanceTimersByTime(59_999);
    expect(book.get('old')).toBeDefined();
    vi.advanceTimersByTime(1);
    expect(book.get('older-asked')).toBeUndefined();
    book.create({ id: 'new', prompt: '', seconds: 5, durationMs: 0 });
    expect(book.size).toBe(1);
    expect(book.get('new')).toBeDefined();
  });
});

describe('every video simulator', () => {
  it('keeps its tasks in a bounded book, by default the embedded default bounds', async () => {
    for (const m of videoModules) {
      const sim = await m.simulator.start({ taskMs: 1_000 });
      sims.push(sim);
      expect(sim.tasks, m.vendor.id).toBeInstanceOf(TaskBook);
    }
    const book = new TaskBook();
    for (let i = 0; i <= DEFAULT_TASK_LIMITS.maxTasks; i++) book.create({ prompt: '', seconds: 5, durationMs: 0 });
    expect(book.size).toBe(DEFAULT_TASK_LIMITS.maxTasks);
  });
});

const TASKS = '/api/v3/contents/generations/tasks';

describe('the Seedance simulator', () => {
  const ark = (sim: SimServer, method: string, path: string, body?: unknown) =>
    fetch(`${sim.url}${path}`, { method, headers: { authorization: 'Bearer sim-key', 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

  it('keeps neither padded bodies nor more tasks than its bound; a recent task still polls, a forgotten one is not found', async () => {
    const sim = await startSeedanceSimulator({ taskMs: 60_000, tasks: { maxTasks: 5 } });
    sims.push(sim);
    sim.record = false;
    const pad = 'x'.repeat(2 * MB);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await ark(sim, 'POST', TASKS, { model: 'doubao-seedance-1-0-pro-250528', content: [{ type: 'text', text: `shot ${i}` }], ratio: '16:9', seed: 7, x_pad: pad });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { id: string }).id);
    }
    expect(sim.tasks!.size).toBe(5);
    const last = sim.tasks!.get(ids[11]!)!;
    expect(JSON.stringify(last.data).length).toBeLessThan(1_000);

    const recent = await ark(sim, 'GET', `${TASKS}/${ids[11]}`);
    expect(recent.status).toBe(200);
    expect(await recent.json()).toMatchObject({ id: ids[11], model: 'doubao-seedance-1-0-pro-250528', status: 'queued', ratio: '16:9', seed: 7, duration: 5 });

    const gone = await ark(sim, 'GET', `${TASKS}/${ids[0]}`);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as any).error).toMatchObject({ code: 'ResourceNotFound', type: 'NotFound' });
    expect((await ark(sim, 'DELETE', `${TASKS}/${ids[0]}`)).status).toBe(404);
  });
});

describe('the fal simulator', () => {
  it('keeps no padded body, and still answers a result from the fields it kept', async () => {
    const sim = await startFalSim({ taskMs: 0, tasks: { maxTasks: 3 } });
    sims.push(sim);
    sim.record = false;
    const submit = (body: unknown) =>
      fetch(`${sim.url}/fal-ai/kling-video/v2/master/text-to-video`, { method: 'POST', headers: { authorization: 'Key sim-key', 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await submit({ prompt: i === 5 ? 'a cat [bad-image]' : 'a cat', image_url: `data:image/png;base64,${'A'.repeat(2 * MB)}`, x_pad: 'x'.repeat(2 * MB) });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { request_id: string }).request_id);
    }
    expect(sim.tasks!.size).toBe(3);
    expect(JSON.stringify(sim.tasks!.get(ids[5]!)!.data).length).toBeLessThan(1_000);

    const app = 'fal-ai/kling-video';
    const failed = await fetch(`${sim.url}/${app}/requests/${ids[5]}`, { headers: { authorization: 'Key sim-key' } });
    expect(failed.status).toBe(422);
    expect(((await failed.json()) as any).detail[0]).toMatchObject({ loc: ['body', 'image_url'], type: 'file_download_error' });
    const gone = await fetch(`${sim.url}/${app}/requests/${ids[0]}/status`, { headers: { authorization: 'Key sim-key' } });
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({ detail: 'Request not found' });
  });
});
