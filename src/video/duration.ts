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
