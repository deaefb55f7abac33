/**
 * What the gateway needs to know about a Wan model from its name alone: which endpoint it uses,
 * how it expresses size (pixel `size` vs a `resolution` tier), and which frame/reference inputs it takes.
 * DashScope names are regular enough (wan2.6-t2v, wanx2.1-kf2v-plus, wan2.7-i2v ...) that a parse beats
 * a hard-coded list, so dated snapshots (wan2.7-t2v-2026-06-12) work on the day they appear.
 */

export type WanKind = 't2v' | 'i2v' | 'kf2v' | 'r2v' | 'other';

export interface WanModelInfo {
  kind: WanKind;
  /** wan2.7 and later use `input.media[]` and `resolution` + `ratio` ("new protocol"). */
  mediaProtocol: boolean;
  /** kf2v models live on their own endpoint. */
  path: string;
  /** Whether the model takes a `resolution` tier ("720P") rather than a pixel `size`. */
  usesTier: boolean;
  /** Frame inputs the model accepts. */
  frames: { first: boolean; last: boolean };
  /** Whether soft references (input_references) have a place in this model's input. */
  takesReferences: boolean;
}

export const VIDEO_GENERATION_PATH = '/api/v1/services/aigc/video-generation/video-synthesis';
export const IMAGE2VIDEO_PATH = '/api/v1/services/aigc/image2video/video-synthesis';
export const TASKS_PATH = '/api/v1/tasks';

/** Every Wan model defaults to 5 seconds when no duration is sent. */
export const DEFAULT_SECONDS = 5;

function version(model: string): number | undefined {
  const m = /^wanx?(\d+)\.(\d+)/.exec(model);
  return m ? Number(m[1]) + Number(m[2]) / 10 : undefined;
}

export function wanModelInfo(model: string): WanModelInfo {
  const name = model.toLowerCase();
  const kind: WanKind = name.includes('kf2v')
    ? 'kf2v'
    : name.includes('i2v')
      ? 'i2v'
      : name.includes('r2v')
        ? 'r2v'
        : name.includes('t2v')
          ? 't2v'
          : 'other';
  const v = version(name);
  const mediaProtocol = v !== undefined && v >= 2.7;
  const path = kind === 'kf2v' ? IMAGE2VIDEO_PATH : VIDEO_GENERATION_PATH;
  const usesTier = mediaProtocol || kind === 'i2v' || kind === 'kf2v';
  let frames = { first: false, last: false };
  if (kind === 'kf2v') frames = { first: true, last: true };
  else if (mediaProtocol && (kind === 'i2v' || kind === 'other')) frames = { first: true, last: true };
  else if (mediaProtocol && kind === 'r2v') frames = { first: true, last: false };
  else if (kind === 'i2v') frames = { first: true, last: false };
  return { kind, mediaProtocol, path, usesTier, frames, takesReferences: kind === 'r2v' };
}

/** The pixel sizes DashScope accepts for t2v/r2v, by tier and aspect ratio (W*H with an asterisk). */
const SIZE_TABLE: Record<number, Record<string, [number, number]>> = {
  480: { '16:9': [832, 480], '9:16': [480, 832], '1:1': [624, 624] },
  720: { '16:9': [1280, 720], '9:16': [720, 1280], '1:1': [960, 960], '4:3': [1088, 832], '3:4': [832, 1088] },
  1080: { '16:9': [1920, 1080], '9:16': [1080, 1920], '1:1': [1440, 1440], '4:3': [1632, 1248], '3:4': [1248, 1632] },
};

/**
 * The tier a pixel size belongs to. A listed size answers from the table (624*624 is a 480P size even
 * though its short side is nearer 720); anything else is named by its short side.
 */
export function tierOfSize(width: number, height: number): number {
  for (const [tier, sizes] of Object.entries(SIZE_TABLE)) {
    if (Object.values(sizes).some(([w, h]) => w === width && h === height)) return Number(tier);
  }
  return Math.min(width, height);
}

/** The ratios with a documented pixel size at a tier (none for a tier the table lacks). */
export function ratiosAt(tier: number): string[] {
  return Object.keys(SIZE_TABLE[tier] ?? {});
}

/** The documented pixel size for a tier and ratio, when there is one. */
export function sizeFor(tier: number, ratio: string): { width: number; height: number } | undefined {
  const hit = SIZE_TABLE[tier]?.[ratio];
  return hit ? { width: hit[0], height: hit[1] } : undefined;
}
