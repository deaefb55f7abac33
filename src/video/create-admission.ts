import type { AuthContext } from '../auth/types.js';
import { admitOrThrow, giveBack } from '../limits/refusal.js';
import { scopesFor } from '../limits/scopes.js';
import type { Admission, LimitScope } from '../limits/types.js';
import type { CreateControl } from './create.js';
import type { VideoDeps } from './deps.js';

/** Where an admission's x-ratelimit-* headers go (the answer's). */
type HeaderSink = Pick<CreateControl, 'rateLimitHeaders'>;
/** What an admission needs of the video deps: the limiter and the default quota. */
type LimitDeps = Pick<VideoDeps, 'limiter' | 'limitDefaults'>;

/**
 * One request's admission against the video rate limit (a create, a call on a character, or a
 * Files API upload: routes/files.ts), which can be given back once. A create takes it itself, after its checks; a route with costly work to
 * do before the create (reading a stored file into memory) takes it first, so that a request the
 * limit refuses does none of that work, and hands it to the create (CreateOptions.admitted).
 *
 * Until the create has taken it over (`takeOver`, where it would have admitted on its own), every
 * refusal is the route's to give back, whatever its status: before that point a create admits
 * nothing, so neither may the admission taken early for it count (a 503 `upstream_unavailable`
 * or `store_unavailable` refuses a create that did no work). From then on the create's own rules
 * decide (limits/refusal.ts).
 */
export class VideoAdmission {
  private givenBack = false;
  private takenOver = false;

  private constructor(
    private readonly deps: LimitDeps,
    private readonly scopes: readonly LimitScope[],
    private readonly admission: Admission,
    private readonly control: HeaderSink,
  ) {}

  /** Admits a video request (429 when the window is full) and puts the x-ratelimit-* headers on the answer. */
  static async admit(deps: LimitDeps, ctx: AuthContext, control: HeaderSink): Promise<VideoAdmission> {
    const scopes = scopesFor(ctx, 'video', deps.limitDefaults);
    const admission = await admitOrThrow(deps.limiter, 'video', scopes, 0);
    control.rateLimitHeaders?.(admission.headers);
    return new VideoAdmission(deps, scopes, admission, control);
  }

  /** The create has reached the point where it would admit: whether it goes back is its to decide now. */
  takeOver(): this {
    this.takenOver = true;
    return this;
  }

  /**
   * Gives the admission back (a refusal: the work was not done), at most once however many layers
   * see the refusal, and puts the windows after it on the answer. (The give-back is awaited first:
   * an optional call would skip its argument, the give-back, for a caller that takes no headers.)
   */
  async giveBack(): Promise<void> {
    if (this.givenBack) return;
    this.givenBack = true;
    const headers = await giveBack(this.deps.limiter, 'video', this.scopes, 0, this.admission);
    this.control.rateLimitHeaders?.(headers);
  }

  /** For the route that took it early: a refusal before the create took it over gives it back. */
  async giveBackUnlessTakenOver(): Promise<void> {
    if (!this.takenOver) await this.giveBack();
  }
}
