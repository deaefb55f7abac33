import { isIP } from 'node:net';
import { errors, type GatewayError } from '../core/errors.js';
import { isBlockedAddress } from '../http/ssrf.js';
import type { Upstream } from '../http/types.js';
import type { VideoDeps } from './deps.js';
import type { TaskRef, VideoOutput, VideoVendor } from './types.js';

/**
 * Where a video download may go. The upstream's base URL, and any other base URL its options name
 * (Veo's storage_base_url), were chosen by the operator: their origins are fetched as they are.
 * Every other URL came from a vendor (the download URL in its answer, a redirect's Location) and
 * follows the client-media rules of video.media: an origin listed in allowed_origins is fetched as
 * it is; any other must not be a loopback, private, link-local or metadata address unless
 * allow_private_networks is on (checked on the address actually connected to), and when the
 * upstream itself is https it must be https too, so a vendor cannot move the download, and the
 * signed URL in it, onto plain http.
 */
export interface DownloadRules {
  chosen: ReadonlySet<string>;
  listed: ReadonlySet<string>;
  allowPrivate: boolean;
  httpsOnly: boolean;
}

export function downloadRules(deps: VideoDeps, up: Upstream): DownloadRules {
  const chosen = new Set<string>();
  for (const raw of [up.baseUrl, ...Object.entries(up.options).filter(([k]) => k.endsWith('base_url')).map(([, v]) => v)]) {
    if (typeof raw !== 'string') continue;
    try {
      chosen.add(new URL(raw).origin);
    } catch {
      // Not a URL: nothing chosen by it.
    }
  }
  // Client media and video downloads follow the one configuration, which the media fetcher holds.
  const policy = deps.media?.policy;
  return { chosen, listed: policy?.trusted ?? new Set(), allowPrivate: policy?.allowPrivateNetworks === true, httpsOnly: new URL(up.baseUrl).protocol === 'https:' };
}

/** A refused location: a short reason for the log, and why in the words of the error. */
export interface Refusal {
  reason: string;
  why: string;
}

/**
 * How one hop is sent: 'direct' through the upstream client (an origin the operator chose or
 * listed, or any address when private networks are allowed), 'checked' through an agent that
 * refuses private addresses at connect time (a name can resolve differently on every lookup), or
 * refused outright.
 */
export function route(url: URL, rules: DownloadRules): 'direct' | 'checked' | Refusal {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { reason: 'not http(s)', why: 'it is not an http(s) URL' };
  if (rules.chosen.has(url.origin) || rules.listed.has(url.origin)) return 'direct';
  if (rules.httpsOnly && url.protocol !== 'https:') return { reason: 'plain http', why: 'it is plain http while the upstream is https' };
  if (rules.allowPrivate) return 'direct';
  // The guarded agent refuses a private address before any connection: a literal at once, a name on what it resolves to.
  return 'checked';
}

export function refusedLocation(why: string): GatewayError {
  return errors.upstreamError(`The vendor pointed the video download at a location the gateway does not fetch from: ${why}.`);
}

/** A finished video the download would refuse: which output, why (the gateway's words), and the origin to log. */
export interface UnreachableOutput {
  index: number;
  why: string;
  refused: string;
}

/**
 * The first output of a finished job whose download these rules would refuse, whatever the moment
 * it is asked for: then the job has no video to pay for, and fails at settlement instead of being
 * billed for a download that answers 502 forever (a `file:` URL, `javascript:`, `data:` text, or
 * http://169.254.169.254/ from a vendor). Checked on the request the download would send (the
 * adapter's buildContent: a Cloud Storage URI becomes a storage URL). Only what is decided without
 * a lookup is refused here: a host name that resolves to a private address is refused when the
 * download connects (it may resolve otherwise by then), as are the redirects it may meet.
 * Outputs given inline (`inline[i]`, stored by the gateway) are not downloads.
 */
export function unreachableOutput(
  deps: VideoDeps,
  vendor: VideoVendor,
  up: Upstream,
  task: TaskRef,
  outputs: readonly VideoOutput[],
  inline: readonly (Buffer | undefined)[],
): UnreachableOutput | undefined {
  const rules = downloadRules(deps, up);
  for (let index = 0; index < outputs.length; index++) {
    if (inline[index]) continue;
    let url: URL;
    try {
      url = new URL(vendor.buildContent(task, outputs[index]!, up).url);
    } catch {
      // No request the adapter can build (a malformed storage URI, no location at all), or no URL.
      return { index, why: 'it is not a URL the gateway can download', refused: '(unreadable)' };
    }
    const refused = url.origin === 'null' ? url.protocol : url.origin;
    const way = route(url, rules);
    if (typeof way === 'object') return { index, why: way.why, refused };
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (way === 'checked' && isIP(host) !== 0 && isBlockedAddress(host)) return { index, why: 'it is a private or local network address', refused };
  }
  return undefined;
}
