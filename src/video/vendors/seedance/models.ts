/**
 * Seedance model families and what each accepts. Ark model ids carry the family in their name
 * (doubao-seedance-1-5-pro-251215, seedance-1-0-lite-i2v-250428, dreamina-seedance-2-0-260128);
 * inference endpoint ids (ep-...) do not, so the public model name is consulted as well.
 */
export type SeedanceFamily = '1.0' | '1.0-lite-i2v' | '1.5-pro' | '2.0';

export interface SeedanceCaps {
  family: SeedanceFamily | undefined;
  /** Longest duration the family generates; the hold for `duration: -1` covers it. */
  maxSeconds: number;
  /** `duration: -1` (model decides) and `draft` exist on 1.5 pro only. */
  autoDuration: boolean;
  draft: boolean;
  /** Which kinds of reference material the family reads from content[]. */
  references: ReadonlySet<'image' | 'video' | 'audio'>;
}

export const TASKS_PATH = '/api/v3/contents/generations/tasks';
export const DEFAULT_SECONDS = 5;
/** Seedance renders at 24 fps; used to turn a `frames` request into a hold. */
export const DEFAULT_FPS = 24;

function familyOf(name: string): SeedanceFamily | undefined {
  const n = name.toLowerCase().replace(/\./g, '-');
  if (/seedance-2-0/.test(n)) return '2.0';
  if (/seedance-1-5-pro/.test(n)) return '1.5-pro';
  if (/seedance-1-0-lite-i2v/.test(n)) return '1.0-lite-i2v';
  if (/seedance-1-0/.test(n)) return '1.0';
  return undefined;
}

const NONE: ReadonlySet<'image' | 'video' | 'audio'> = new Set();

/** Caps for a job; `upstreamModel` first, then the public name (which an ep- id hides). */
export function seedanceCaps(upstreamModel: string, publicModel?: string): SeedanceCaps {
  const family = familyOf(upstreamModel) ?? (publicModel ? familyOf(publicModel) : undefined);
  switch (family) {
    case '2.0':
      return { family, maxSeconds: 15, autoDuration: false, draft: false, references: new Set(['image', 'video', 'audio']) };
    case '1.5-pro':
      return { family, maxSeconds: 12, autoDuration: true, draft: true, references: NONE };
    case '1.0-lite-i2v':
      return { family, maxSeconds: 12, autoDuration: false, draft: false, references: new Set(['image']) };
    case '1.0':
      return { family, maxSeconds: 12, autoDuration: false, draft: false, references: NONE };
    default:
      // Unknown ids (endpoint ids behind a neutral public name): let Ark judge the 1.5-only options.
      return { family, maxSeconds: 15, autoDuration: true, draft: true, references: NONE };
  }
}
