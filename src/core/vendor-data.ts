import { setOwn, type Json, type JsonObject } from './json.js';

/**
 * The bound on what a job keeps and returns of a vendor's answer (`vendor_data`), applied where a
 * poll's result is stored (video/refresh.ts) and where a stored row is read (store/rows.ts, for rows
 * written before the bound). In core because both layers use it.
 */

/** Largest vendor_data kept with a job and returned with it, as serialized JSON in UTF-8 bytes. */
export const VENDOR_DATA_MAX_BYTES = 64 * 1024;

/**
 * Added to a vendor_data that had to be cut: `omitted_fields` names top-level fields left out (as
 * many as fit; `omitted_count` counts all of them), `max_bytes` is the bound.
 */
export const VENDOR_DATA_TRUNCATED = 'vendor_data_truncated';

/**
 * The vendor_data to keep and show, given the redaction of its upstream: bounded first, so that only
 * what is kept is redacted (redaction is linear in the text, but ~1 us a character on hostile text:
 * a 63 MB field cost 8 s redacted whole), then bounded again, since a replacement may be longer than
 * what it replaced. The bound keeps or leaves out whole fields, and the names it lists of those left
 * out are redacted with the rest, so nothing a redaction would hide is kept in part.
 */
export function keptVendorData(data: JsonObject, redact: (v: JsonObject) => JsonObject): JsonObject {
  return boundVendorData(redact(boundVendorData(data)));
}

/** Nesting deeper than this is not kept: no vendor object needs it, and walking it is the cost. */
const MAX_DEPTH = 64;
/** Room left for the marker, so the cut object with its marker stays within the bound. */
const MARKER_ROOM = 4 * 1024;
/** Field names longer than this are counted but not listed (a name is never cut: it may hide a credential). */
const MAX_LISTED_NAME = 128;

/**
 * The vendor_data to keep: unchanged when it serializes to at most `maxBytes`; otherwise the
 * top-level fields are kept smallest first while they fit (so the most fields survive, in their
 * original order) and the rest are named in the `vendor_data_truncated` marker. Fields are kept or
 * left out whole, never cut, so nothing that was redacted as a whole string can reappear in part.
 * Costs at most one pass over `maxBytes` worth of each field: a huge field is given up on as soon as
 * it is known to be too large.
 */
export function boundVendorData(data: JsonObject, maxBytes: number = VENDOR_DATA_MAX_BYTES): JsonObject {
  if (room(data, maxBytes, 0) >= 0) return data;
  const budget = Math.max(0, maxBytes - MARKER_ROOM);
  const members: Array<{ key: string; size: number }> = [];
  for (const key of Object.keys(data)) {
    if (data[key] === undefined) continue;
    // `"key":value` (the comma between members is counted when it is kept).
    const left = room(data[key], room(key, budget, 0) - 1, 1);
    members.push({ key, size: left < 0 ? Number.POSITIVE_INFINITY : budget - left });
  }
  const keep = new Set<string>();
  let used = 2;
  for (const m of [...members].sort((a, b) => a.size - b.size)) {
    const add = m.size + (keep.size > 0 ? 1 : 0);
    if (used + add > budget) break;
    used += add;
    keep.add(m.key);
  }
  const out: JsonObject = {};
  const omitted: string[] = [];
  for (const m of members) {
    if (keep.has(m.key)) setOwn(out, m.key, data[m.key]!);
    else omitted.push(m.key);
  }
  out[VENDOR_DATA_TRUNCATED] = { omitted_fields: listable(omitted), omitted_count: omitted.length, max_bytes: maxBytes };
  return out;
}

/** As many of the omitted names as fit in the marker's room, whole. */
function listable(names: string[]): string[] {
  const out: string[] = [];
  // What the rest of the marker takes: its key, the counts, braces and commas.
  let left = MARKER_ROOM - 256;
  for (const name of names) {
    if (name.length > MAX_LISTED_NAME) continue;
    const size = Buffer.byteLength(JSON.stringify(name)) + 1;
    if (size > left) break;
    left -= size;
    out.push(name);
  }
  return out;
}

/**
 * `budget` minus the serialized size of `v`, or a negative number as soon as `v` is known not to fit
 * (or nests deeper than MAX_DEPTH). Stops early, so a 50 MB field costs no more than the budget.
 */
function room(v: Json | undefined, budget: number, depth: number): number {
  if (budget < 0) return -1;
  switch (typeof v) {
    case 'string':
      // Every character is at least one byte of output: a longer string cannot fit.
      return v.length > budget ? -1 : budget - Buffer.byteLength(JSON.stringify(v));
    case 'number':
      return budget - (Number.isFinite(v) ? String(v).length : 4);
    case 'boolean':
      return budget - (v ? 4 : 5);
    case 'object': {
      if (v === null) return budget - 4;
      if (depth >= MAX_DEPTH) return -1;
      if (Array.isArray(v)) {
        let left = budget - 2 - Math.max(0, v.length - 1);
        for (const item of v) {
          if (left < 0) return -1;
          left = room(item, left, depth + 1);
        }
        return left;
      }
      let left = budget - 2;
      let first = true;
      for (const key in v) {
        if (!Object.hasOwn(v, key) || v[key] === undefined) continue;
        if (!first) left -= 1;
        first = false;
        left = room(v[key], room(key, left, depth) - 1, depth + 1);
        if (left < 0) return -1;
      }
      return left;
    }
    default:
      // An array slot holding undefined serializes as null.
      return budget - 4;
  }
}
