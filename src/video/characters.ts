import { keyMayUseModel } from '../auth/authorize.js';
import type { AuthContext } from '../auth/types.js';
import { errors, isGatewayError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { redactorFor } from '../core/redact.js';
import { TransportError, type Upstream, type UpstreamRequest } from '../http/types.js';
import { refusalGivesBack } from '../limits/refusal.js';
import type { ModelInfo } from '../routing/catalog.js';
import { withFailover } from '../routing/failover.js';
import type { CreateControl } from './create.js';
import { VideoAdmission } from './create-admission.js';
import type { VideoDeps } from './deps.js';
import { jobUpstream } from './job-upstream.js';
import type { UploadedVideo, VendorCharacter, VideoCharacters, VideoVendor } from './types.js';
import { boundedAnswer, keptVendorData } from './vendors/answers.js';

/**
 * Characters (OpenAI's POST /videos/characters, GET /videos/characters/{id}). The gateway keeps no
 * row for them: the vendor's id is sealed with the account, upstream, vendor and model into the id
 * the client gets (core/sealed-id.ts, kind 'c'), exactly as job ids are. So the vendor's id never
 * leaves the gateway, a character is read back on the upstream that made it, and an id of another
 * account, a tampered one, or a video's id opens to nothing: the same 404.
 */

function notFound(id: string) {
  return errors.notFound(`No character with id '${id.length > 64 ? `${id.slice(0, 64)}...` : id}'.`, 'character_not_found');
}

/** 400 unless the model's capabilities and its vendor's adapter both offer characters. */
function characterCalls(deps: VideoDeps, model: string, vendor: VideoVendor | undefined): VideoCharacters {
  if (!deps.capabilities(model)?.characters || !vendor?.characters)
    throw errors.invalidRequest(`Characters are not supported for model '${model}'.`, 'model', 'operation_unsupported');
  return vendor.characters;
}

/**
 * The longest vendor id sealed into a character's id. Sealed, it grows by a third and more, and the
 * client sends it back in a URL: a vendor's megabyte-long id would make an id no server reads back
 * (the request line past any header limit). Real ids are a few dozen characters.
 */
const MAX_VENDOR_ID = 512;

/** One call to one upstream: its answer read as a character (under the poll answers' small cap), or its refusal. */
async function attempt(deps: VideoDeps, vendor: VideoVendor, calls: VideoCharacters, up: Upstream, req: UpstreamRequest, signal?: AbortSignal) {
  const res = await deps.client.send(up, vendor, boundedAnswer(req), signal);
  if (res.status < 200 || res.status >= 300) return { ok: false as const, verdict: vendor.classifyError(res) };
  let value: VendorCharacter | undefined;
  try {
    value = calls.parse(res);
  } catch {
    // Left undefined: unreadable.
  }
  if (!value || value.id.length > MAX_VENDOR_ID) throw new TransportError('reset', `unreadable character answer from ${up.name}`, false);
  return { ok: true as const, value };
}

/** The client's view: the sealed id, and what the vendor said, redacted (its own id left out). */
function present(id: string, c: VendorCharacter, up: Upstream): JsonObject {
  const r = redactorFor(up);
  return { id, created_at: c.createdAt, name: c.name === null ? null : r.message(c.name), vendor_data: keptVendorData(c.vendorData, (v) => r.json(v)) };
}

/**
 * Makes a character on the first upstream serving the model that accepts it (failing over like a
 * create). No price applies; it counts as one request against the key's and account's video rate
 * limits, given back when it is refused.
 */
export async function createCharacter(
  deps: VideoDeps, ctx: AuthContext, model: ModelInfo, input: { name: string; video: UploadedVideo }, control: CreateControl = {},
): Promise<JsonObject> {
  const candidates = deps.catalog.candidates(model.name, ctx.account);
  const first = candidates[0];
  const vendor = first ? deps.vendors.get(first.vendor) : undefined;
  if (!first || !vendor) throw errors.upstreamUnavailable(`No video upstream is configured for '${model.name}'.`);
  const calls = characterCalls(deps, model.name, vendor);
  const admitted = await VideoAdmission.admit(deps, ctx, control);
  try {
    const { value, upstream } = await withFailover(candidates, (up) => attempt(deps, vendor, calls, up, calls.create(input, up), control.signal), {
      circuits: deps.catalog.circuits,
      onAttemptFailed: (up, reason) => deps.log.warn({ upstream: up.name, reason }, 'character create attempt failed'),
    });
    const id = deps.sealer.seal({ j: '', a: ctx.account.id, u: upstream.name, v: vendor.id, m: model.name, d: 0, t: value.id, k: 'c' });
    return present(id, value, upstream);
  } catch (e) {
    // As a create's: the refused answer's headers describe the windows after the give-back.
    if (refusalGivesBack(e)) await admitted.giveBack();
    throw e;
  }
}

/**
 * Reads a character back from the upstream that made it. A key whose model patterns leave out the
 * character's model gets the 404 of an absent one, as for a video: a 403 naming the model would tell
 * it the character exists. `authorize` then checks the rest of what a call to the model needs (the
 * model still configured and enabled for the account). Unlike a video's, every
 * read asks the vendor, with the operator's credentials: it counts as one request against the
 * key's and account's video rate limits (and is not given back: the vendor answered it), or one
 * key could spend the upstream's own limit, whose 429s open its circuit for every account.
 */
export async function getCharacter(
  deps: VideoDeps, ctx: AuthContext, id: string, authorize: (model: string) => unknown, control: Pick<CreateControl, 'signal' | 'rateLimitHeaders'> = {},
): Promise<JsonObject> {
  const claims = deps.sealer.open(id);
  if (!claims || claims.k !== 'c' || claims.a !== ctx.account.id || claims.t === '' || !keyMayUseModel(ctx.key, claims.m)) throw notFound(id);
  authorize(claims.m);
  const up = jobUpstream(deps, { upstream: claims.u, vendor: claims.v });
  const vendor = deps.vendors.get(claims.v);
  // The upstream that holds it is gone from the config (or now another vendor's): nowhere to read it.
  if (!up || !vendor?.characters) throw notFound(id);
  if (!deps.catalog.servingUpstreams(claims.m, ctx.account).some((u) => u.name === up.name))
    throw errors.permissionDenied('The upstream that holds this character is not enabled for this account.');
  const calls = vendor.characters;
  await VideoAdmission.admit(deps, ctx, control);
  try {
    const { value } = await withFailover([up], (u) => attempt(deps, vendor, calls, u, calls.get(claims.t, u), control.signal), { circuits: deps.catalog.circuits });
    return present(id, value, up);
  } catch (e) {
    // The vendor no longer has it.
    if (isGatewayError(e) && e.status === 404) throw notFound(id);
    throw e;
  }
}
