import type { AuthContext } from '../auth/types.js';
import { admitOrThrow, giveBack } from '../limits/refusal.js';
import { scopesFor } from '../limits/scopes.js';
import type { Admission, LimitScope } from '../limits/types.js';
import type { CreateControl } from './create.js';
import type { VideoDeps } from './deps.js';

/**
 * A video create's admission against the video rate limit, and whether it was given back. The
 * create takes it itself, after its checks; a route with costly work to do before the create
 * (reading a stored file into memory) takes it first, so that a request the limit refuses does
 * none of that work, and hands it to the create (CreateOptions.admitted).
 */
export interface VideoAdmission {
  readonly admission: Admission;
  readonly scopes: readonly LimitScope[];
  givenBack: boolean;
}

/** Admits a video create (429 when the window is full) and puts the x-ratelimit-* headers on the answer. */
export async function admitVideoCreate(deps: VideoDeps, ctx: AuthContext, control: CreateControl): Promise<VideoAdmission> {
  const scopes = scopesFor(ctx, 'video', deps.limitDefaults);
  const admission = await admitOrThrow(deps.limiter, 'video', scopes, 0);
  control.rateLimitHeaders?.(admission.headers);
  return { admission, scopes, givenBack: false };
}

/**
 * Gives the admission back (a refusal: the work was not done), at most once however many of the
 * create's layers see the refusal, and puts the windows after it on the answer. (The give-back is
 * awaited first: an optional call would skip its argument, the give-back, for a caller that takes
 * no headers.)
 */
export async function giveBackVideoCreate(deps: VideoDeps, admitted: VideoAdmission, control: CreateControl): Promise<void> {
  if (admitted.givenBack) return;
  admitted.givenBack = true;
  const headers = await giveBack(deps.limiter, 'video', admitted.scopes, 0, admitted.admission);
  control.rateLimitHeaders?.(headers);
}
