import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { MAX_JSON_DEPTH, MAX_OBJECT_MEMBERS } from '../../src/http/json-depth.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A multipart create's field values that read as JSON objects or arrays are parsed into the body,
 * so they get a JSON body's limits (nesting, object members counted across all the form's fields),
 * checked before any of them is parsed. Before, a field of 5,000 `[` and as many `]` was a 500 (the
 * stack ran out in the walks after the parse), and 62 fields of 250 KB objects (~2M members, which
 * a JSON body is refused for) held the event loop about a second.
 * Nested field names that are Object.prototype's (`parameters[toString]`) are names like any other,
 * as they are in a JSON body; before, they were refused as sent twice. At the top level too (a field
 * named `toString`), which the form reader refused as a forbidden key.
 */
let gw: TestGateway;
let sim: SimServer;

beforeAll(async () => {
  sim = await wan.simulator.start({ taskMs: 60_000 });
  gw = await startTestGateway(upstreamsFor([{ module: wan, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

type Field = [name: string, value: string] | [name: string, value: string, type: string];

const BOUNDARY = 'jsonFormBoundary';

/**
 * POSTs a create form of `model`, `prompt` and `fields`; a field with a type gets a Content-Type
 * header and no filename (a field declared as JSON, not a file, which FormData cannot express).
 */
async function postForm(fields: Field[]): Promise<{ status: number; json: any }> {
  const { key } = await gw.newKey(100);
  const part = ([name, value, type]: Field) =>
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n${value}\r\n`;
  const all: Field[] = [['model', 'wan2.6-t2v'], ['prompt', 'a form with JSON in it'], ...fields];
  const body = all.map(part).join('') + `--${BOUNDARY}--\r\n`;
  const res = await fetch(`${gw.url}/v1/videos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body,
  });
  return { status: res.status, json: await res.json() };
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
/** An object of `n` members, `{"k0":0,...}`. */
const wide = (n: number, from = 0) => `{${Array.from({ length: n }, (_, i) => `"k${from + i}":0`).join(',')}}`;

describe('JSON in multipart fields: the limits of a JSON body', () => {
  it('a field nested past the body depth is 400 too_deep naming the field, however deep', async () => {
    for (const depth of [MAX_JSON_DEPTH, 5_000, 100_000]) {
      const r = await postForm([['foo', nested(depth)]]);
      expect([r.status, r.json.error], `depth ${depth}`).toEqual([400, expect.objectContaining({ type: 'invalid_request_error', code: 'too_deep', param: 'foo' })]);
    }
  });

  it('the depth counts from the body, as if the form were a JSON object: a field name nested in brackets leaves less', async () => {
    // {"foo": <value>} : the form is the first level, the value's own nesting may take the rest.
    expect((await postForm([['foo', nested(MAX_JSON_DEPTH - 1)]])).status).toBe(200);
    const r = await postForm([['foo[a][b]', nested(MAX_JSON_DEPTH - 2)]]);
    expect([r.status, r.json.error?.code, r.json.error?.param]).toEqual([400, 'too_deep', 'foo[a][b]']);
    expect((await postForm([['foo[a][b]', nested(MAX_JSON_DEPTH - 3)]])).status).toBe(200);
  });

  it('object members are counted across all the form fields together: 400 too_many_fields naming the field the count ran out in', async () => {
    const per = MAX_OBJECT_MEMBERS / 4 + 1;
    // Each field alone is well under the limit; four of them are over it.
    const fields: Field[] = [0, 1, 2, 3].map((i) => [`f${i}`, wide(per, i * per)]);
    const r = await postForm(fields);
    expect([r.status, r.json.error]).toEqual([400, expect.objectContaining({ type: 'invalid_request_error', code: 'too_many_fields', param: 'f3' })]);
    // Three of them fit.
    expect((await postForm(fields.slice(0, 3))).status).toBe(200);
  });

  it("sixty fields of 20,000 members each: the second is already over the form's one budget", async () => {
    const fields: Field[] = Array.from({ length: 60 }, (_, i) => [`p${i}`, wide(20_000)]);
    const r = await postForm(fields);
    // The first holds the whole budget (an object of n members counts n). Before, all 1.2M members were parsed and sent on.
    expect([r.status, r.json.error?.code, r.json.error?.param]).toEqual([400, 'too_many_fields', 'p1']);
  });

  it('a field declared as application/json is checked for the limits before it is parsed', async () => {
    const deep = await postForm([['foo', nested(100_000), 'application/json']]);
    expect([deep.status, deep.json.error?.code, deep.json.error?.param]).toEqual([400, 'too_deep', 'foo']);
    const broken = await postForm([['foo', '{"a":', 'application/json']]);
    expect([broken.status, broken.json.error?.code]).toEqual([400, 'invalid_json']);
  });

  it('a JSON field within the limits still reaches the vendor parsed', async () => {
    sim.reset();
    const r = await postForm([['parameters', '{"watermark":true,"extra":{"a":[1,{"b":2}]}}']]);
    expect(r.status).toBe(200);
    const sent = sim.lastReceived('POST', /video-synthesis$/)!.json;
    expect(sent.parameters).toMatchObject({ watermark: true, extra: { a: [1, { b: 2 }] } });
  });
});

describe("top-level form field names that are Object.prototype's", () => {
  const NAMES = ['toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];

  it('are ordinary names, as in a JSON body: accepted and sent on as the JSON body sends them', async () => {
    sim.reset();
    const form = await postForm(NAMES.map((n) => [n, 'x']));
    expect(form.status, JSON.stringify(form.json.error)).toBe(200);
    const fromForm = sim.lastReceived('POST', /video-synthesis$/)!.json;
    sim.reset();
    const { key } = await gw.newKey(100);
    const res = await fetch(`${gw.url}/v1/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'wan2.6-t2v', prompt: 'a form with JSON in it', ...Object.fromEntries(NAMES.map((n) => [n, 'x'])) }),
    });
    expect(res.status).toBe(200);
    const fromJson = sim.lastReceived('POST', /video-synthesis$/)!.json;
    expect(fromForm).toEqual(fromJson);
    expect(fromForm.parameters).toMatchObject(Object.fromEntries(NAMES.map((n) => [n, 'x'])));
    expect(({} as Record<string, unknown>).toString).toBe(Object.prototype.toString);
  });

  it('__proto__, constructor and prototype are refused as in a JSON body', async () => {
    for (const name of ['__proto__', 'constructor', 'prototype']) {
      const r = await postForm([[name, '1']]);
      expect([r.status, r.json.error?.code], name).toEqual([400, 'forbidden_key']);
    }
  });
});

describe("nested form field names that are Object.prototype's", () => {
  it('are ordinary names, as in a JSON body, and reach the vendor', async () => {
    sim.reset();
    const r = await postForm([
      ['parameters[toString]', 'a'],
      ['parameters[hasOwnProperty]', '1'],
      ['parameters[valueOf][isPrototypeOf]', 'true'],
      ['parameters[list][]', '{"toString":2}'],
    ]);
    expect(r.status, JSON.stringify(r.json.error)).toBe(200);
    const sent = sim.lastReceived('POST', /video-synthesis$/)!.json;
    expect(sent.parameters).toMatchObject({ toString: 'a', hasOwnProperty: 1, valueOf: { isPrototypeOf: true }, list: [{ toString: 2 }] });
  });

  it('a name sent twice is still refused, and prototype-reaching names stay forbidden', async () => {
    const twice = await postForm([['parameters[toString]', 'a'], ['parameters[toString]', 'b']]);
    expect([twice.status, twice.json.error?.code]).toEqual([400, 'invalid_body']);
    for (const name of ['parameters[__proto__]', 'parameters[constructor]', 'parameters[a][prototype]']) {
      const r = await postForm([[name, '1']]);
      expect([r.status, r.json.error?.code], name).toEqual([400, 'forbidden_key']);
    }
    for (const value of ['{"__proto__":{"x":1}}', '[{"a":{"constructor":{"prototype":1}}}]']) {
      const r = await postForm([['parameters', value]]);
      expect([r.status, r.json.error?.code], value).toEqual([400, 'forbidden_key']);
    }
  });
});
