import { vendorNumber } from '../core/lossless-json.js';
import type { CreateInput } from './types.js';

/**
 * For vendors whose own duration field has another name (Sora's `seconds`, Azure's `n_seconds`):
 * the cross-vendor-common `duration` stands in for the standard `seconds` when `seconds` is absent,
 * and is not forwarded as a field the vendor does not know. A non-numeric `duration` is left
 * alone, so the vendor's own validation speaks.
 */
export function foldCommonDuration<T extends Pick<CreateInput, 'std' | 'native'>>(input: T): T {
  const d = input.native.duration;
  const n = typeof d === 'number' ? d : typeof d === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(d) ? Number(d) : undefined;
  if (n === undefined || !(n > 0)) return input;
  const { duration: _dropped, ...native } = input.native;
  return { ...input, std: { ...input.std, seconds: input.std.seconds ?? n }, native };
}

/**
 * The field a folded `seconds` came from, for an error to name what the client sent: `duration` when
 * the common name stood in for an absent `seconds` (foldCommonDuration), else `seconds`.
 */
export function secondsParamOf(input: Pick<CreateInput, 'std' | 'native'>): 'seconds' | 'duration' {
  return input.std.seconds === undefined && foldCommonDuration(input).std.seconds !== undefined ? 'duration' : 'seconds';
}

/** A vendor's duration figure that can be billed: a finite number of seconds above zero. */
export function isUsableSeconds(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

/**
 * Seconds from a vendor's answer (a JSON number, one with more digits than a double holds, kept as
 * a marker by core/lossless-json.ts, or a numeric string), or undefined when the figure cannot be a
 * duration: missing, not a number, infinite, zero or negative. Adapters read reported durations with
 * it so that a broken figure falls back like a missing one.
 */
export function reportedSeconds(v: unknown): number | undefined {
  const n = vendorNumber(v) ?? (typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN);
  return isUsableSeconds(n) ? n : undefined;
}

/** How a finished job's duration is shown and billed (see settleSeconds). */
export interface SettledSeconds {
  /** The job's `seconds`: the length of its (first) video. */
  seconds: number;
  /** What is billed: every video together. */
  billable: number;
  /** Why the vendor's figure was not billed as it came; absent when it was. */
  adjusted?: string;
}

/**
 * The seconds a completed job is billed for. The hold taken at create already covers the longest
 * result the request can produce (the requested or native duration, every variant or sample, the
 * family's maximum where the model picks the length), and the client saw it as `usage.held`. So:
 * - a usable figure from the vendor is billed as reported, but never beyond the held seconds: a
 *   vendor cannot make a job cost more than it held, and the balance never goes below what the
 *   hold left;
 * - an unusable figure (zero, negative, not a number) bills the held seconds: the vendor did deliver
 *   a video, and the request asked for that length.
 * - `sourceSeconds` (an extension's source, stitched in front of the new segment) raises the length
 *   shown by as much, and is never billed.
 * Either adjustment is returned in `adjusted` so the caller can leave a trail for reconciliation.
 * `held` that is not a usable number bills nothing (nothing was held to capture from).
 */
export function settleSeconds(reported: { seconds: number; billableSeconds?: number; sourceSeconds?: number }, held: number, outputs: number): SettledSeconds {
  const cap = isUsableSeconds(held) ? held : 0;
  const asked = reported.billableSeconds ?? reported.seconds;
  let billable: number;
  let adjusted: string | undefined;
  if (!isUsableSeconds(asked)) {
    billable = cap;
    adjusted = `the vendor reported an unusable duration (${String(asked)}); billed the ${cap} s held`;
  } else if (asked > cap) {
    billable = cap;
    adjusted = `the vendor reported ${asked} s, more than the ${cap} s held; billed ${cap} s`;
  } else {
    billable = asked;
  }
  // An extension's video is its source and the new segment together: only the segment was held,
  // and the source's length (never billed) is shown on top of it.
  const carried = isUsableSeconds(reported.sourceSeconds) ? reported.sourceSeconds : 0;
  const perVideo = cap / Math.max(1, outputs);
  const seconds = isUsableSeconds(reported.seconds) ? Math.min(reported.seconds, cap + carried) : perVideo + carried;
  return adjusted === undefined ? { seconds, billable } : { seconds, billable, adjusted };
}
