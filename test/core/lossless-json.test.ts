import { describe, expect, it } from 'vitest';
import {
  clientJson,
  escapeMarkerLookalike,
  escapeMarkerLookalikes,
  isNumberMarker,
  NUMBER_MARKER,
  parseLossless,
  restoreNumbers,
  restoreString,
  STRING_MARKER,
} from '../../src/core/lossless-json.js';
import { encodeJsonBody } from '../../src/http/json-body.js';
import { encodeMultipart } from '../../src/http/multipart.js';

/** Vendor numbers a double cannot hold survive a parse and a client serialization exactly; nothing else changes. */
describe('lossless vendor JSON', () => {
  it('keeps the text of numbers a double cannot reproduce, and only those', () => {
    const text = '{"a":9007199254740993,"b":123456789012345678901234567890,"c":1e400,"d":-0,"e":-0.0,"f":1e-400,"g":0.1,"h":1.50,"i":9007199254740992,"j":[1,-2.5e3,12345678901234567]}';
    const v = parseLossless(text) as Record<string, unknown>;
    for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) expect(isNumberMarker(v[k] as string), k).toBe(true);
    expect(v).toMatchObject({ g: 0.1, h: 1.5, i: 9007199254740992 });
    expect(v.j).toEqual([1, -2500, `${NUMBER_MARKER}12345678901234567`]);
    expect(clientJson(v)).toBe('{"a":9007199254740993,"b":123456789012345678901234567890,"c":1e400,"d":-0,"e":-0.0,"f":1e-400,"g":0.1,"h":1.5,"i":9007199254740992,"j":[1,-2500,12345678901234567]}');
  });

  it('never changes strings: digits, quotes and escapes inside them stay text', () => {
    const text = '{"s":"1e400 \\" 9007199254740993","t":"2025-07-27","k\\\\":"-0","12345678901234567890":1}';
    expect(parseLossless(text)).toEqual(JSON.parse(text));
  });

  it('unquotes only a whole marker value holding a number', () => {
    const lookalike = { a: `${NUMBER_MARKER}12`, b: `${NUMBER_MARKER}12x`, c: `x"${NUMBER_MARKER}12`, [`${NUMBER_MARKER}5`]: 1 };
    const out = clientJson(lookalike);
    expect(JSON.parse(out)).toEqual({ ...lookalike, a: 12 });
  });

  it('refuses what JSON.parse refuses', () => {
    expect(() => parseLossless('{"a":1e400')).toThrow();
    expect(() => parseLossless('{"a":01234567890123456789}')).toThrow();
  });
});

/**
 * A string that merely looks like a marker (or like the escape of one), from a client or a vendor,
 * comes back as that string: it is escaped where it comes in and unescaped where it goes out.
 */
describe('strings that look like markers', () => {
  // Raw U+E000, escaped in either case, as keys and values, nested, and one holding the escape's own tag.
  const CLIENT = '{"a":"\uE000num:123","b":"\\ue000num:4","c":"\\uE000num:5e400","\uE000num:6":["\uE000str:\uE000num:7",{"d":"\uE000"}],"e":"x\uE000num:8","f":"x\\"\uE000str:9"}';

  it('a client body comes back as it was sent, through the store too', () => {
    const internal = JSON.parse(escapeMarkerLookalikes(CLIENT));
    expect(internal.a).toBe(`${STRING_MARKER}${NUMBER_MARKER}123`);
    expect(clientJson(internal)).toBe(JSON.stringify(JSON.parse(CLIENT)));
    // Stored as JSON text and read back (SQLite and PostgreSQL keep U+E000 as it is).
    expect(clientJson(JSON.parse(JSON.stringify(internal)))).toBe(JSON.stringify(JSON.parse(CLIENT)));
  });

  it('a vendor answer keeps its lookalike strings as strings and its numbers as it wrote them', () => {
    const text = '{"note":"\uE000num:123","esc":"\\ue000num:7","big":9007199254740993,"list":["\uE000str:x",1e400]}';
    const v = parseLossless(text) as Record<string, unknown>;
    expect(isNumberMarker(v.note as string)).toBe(false);
    expect(isNumberMarker(v.big as string)).toBe(true);
    expect(clientJson(v)).toBe('{"note":"\uE000num:123","esc":"\uE000num:7","big":9007199254740993,"list":["\uE000str:x",1e400]}');
  });

  it('text without U+E000 is handed back as it is', () => {
    const text = '{"a":"\\u00e9 \\\\ue000","b":[1,2]}';
    expect(escapeMarkerLookalikes(text)).toBe(text);
    expect(restoreNumbers('{"a":"x"}')).toBe('{"a":"x"}');
  });

  it('one string outside JSON: escaped in, restored out', () => {
    expect(escapeMarkerLookalike('plain')).toBe('plain');
    expect(restoreString(escapeMarkerLookalike(`${NUMBER_MARKER}1`))).toBe(`${NUMBER_MARKER}1`);
    expect(restoreString(`${NUMBER_MARKER}12345678901234567890`)).toBe('12345678901234567890');
    expect(restoreString('\uE000other')).toBe('\uE000other');
  });

  it('goes upstream as the client sent it, in a JSON body and in a form', async () => {
    const internal = JSON.parse(escapeMarkerLookalikes('{"prompt":"\uE000num:1","n":{"k":"\uE000str:2"}}'));
    expect(encodeJsonBody(internal)).toBe('{"prompt":"\uE000num:1","n":{"k":"\uE000str:2"}}');
    const form = encodeMultipart(internal, [], 'b').body.toString('utf8');
    expect(form).toContain('name="prompt"\r\n\r\n\uE000num:1\r\n');
    expect(form).toContain('name="n"\r\n\r\n{"k":"\uE000str:2"}\r\n');
  });
});
