/**
 * The credential shapes of the one redaction (redact.ts): what a credential looks like, whoever it
 * belongs to, and the cheap test that tells text in which none can be from text that needs them all.
 */

export const REDACTED = '[redacted]';

/** What a shape's match becomes: a replacement string ($1 and the like), or a function of the match and its groups. */
export type Replacement = string | ((match: string, ...groups: (string | undefined)[]) => string);

/**
 * Shapes of credentials, whoever they belong to. Each replacement keeps the label (scheme, parameter
 * name, prefix) so a message still says what was there.
 *
 * Time linear in the text: an attempt of most of these either matches once it has read past its
 * prefix (taking what it read) or fails within a bounded number of characters, or reads a run that
 * no other attempt reads again (an auth token ends at whitespace, which a scheme needs after it).
 * The private-key and JWT shapes are written so; test/core/redact-linear.test.ts tries each shape
 * on runs of its own prefix and alphabet.
 */
export const SHAPES: readonly (readonly [RegExp, Replacement])[] = [
  // PEM private keys, in raw text and JSON-escaped ("\n" as two characters). A BEGIN with no END
  // after it takes the second branch, the rest of the text, which is put back unchanged: no later
  // BEGIN can have an END after it either, and without that branch each later BEGIN would start an
  // attempt reading to the end of the text again (quadratic in a text of many BEGINs).
  [
    /-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----)|[\s\S]*)/g,
    (match, end) => (end === undefined ? match : REDACTED),
  ],
  // Authorization header values: Bearer/Key/Basic/Token schemes, and AWS SigV4's Credential/Signature.
  // A token has a character other than a letter (so "Bearer tokens" stays prose) and never ends in
  // a dot (that one is the sentence's).
  [/\b([Bb]earer|BEARER|Key|Basic|Token)(\s+)(?=[A-Za-z]*[0-9._~+/=:*-])[A-Za-z0-9._~+/=:*-]{5,}[A-Za-z0-9_~+/=*-]/g, `$1$2${REDACTED}`],
  //
  // The next three take a value that may stand in quotes, raw or JSON-escaped (`key=\"...\"` inside
  // a JSON string, as in a relayed event's text): the quote is kept and the value after it replaced.
  // A backslash is part of a value only as JSON's escaped backslash or slash (`\\`, `\/`); any other
  // escape ends it. Taking a lone backslash as a value character replaced only it: the escaped quote
  // became a bare one that ended the JSON string, and the value after it stayed in clear.
  [/\b(Credential|Signature|SignedHeaders)=(\\?["'])?(?:[^,\s"'&\\]|\\[\\/])+/g, `$1=$2${REDACTED}`],
  // Query-string and form credentials: ?key=..., api-key=..., X-Amz-Signature=..., sig=...
  [
    /\b((?:api[-_]?key|apikey|key|access[-_]?token|refresh[-_]?token|id[-_]?token|token|sig|signature|assertion|client[-_]?secret|password|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|ossaccesskeyid)=)(\\?["'])?(?:[^&\s"'<>\\]|\\[\\/])+/gi,
    `$1$2${REDACTED}`,
  ],
  // "api key provided: XXXX" (a wrong key repeated back, possibly masked).
  [/(api key provided:?\s*)(\\?["'])?(?:[^\s"',\\]|\\[\\/])+/gi, `$1$2${REDACTED}`],
  // Prefixed API keys: sk-..., sk_live_..., rk-..., pk_...
  [/\b(sk|rk|pk|ak)([-_])[A-Za-z0-9_*.-]{6,}/g, `$1$2${REDACTED}`],
  // Google API keys and OAuth access tokens.
  [/\bAIza[0-9A-Za-z_-]{20,}/g, REDACTED],
  [/\bya29\.[A-Za-z0-9._-]+/g, REDACTED],
  // AWS access key ids (long-term and temporary).
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, REDACTED],
  // JWTs (a signed assertion or an id token), at a word start: after a space, a quote, "=", ":", or
  // a "-" inside a longer run of base64url characters. Only the run's first "eyJ" at a word start is
  // tried: the lookbehind rejects one with another before it in the same run, looking back no
  // further than that one. A later one's header ends at the same dot with fewer characters, so it
  // fails when the first does; trying each read the run to its end once per "-eyJ" (quadratic: a
  // 256 KB run of "eyJ-" took 18 s).
  [/\beyJ(?<!\beyJ[A-Za-z0-9_-]*?eyJ)[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, REDACTED],
  // "<uuid>:<hex>" key-id:secret pairs.
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{16,}/gi, REDACTED],
  // 32 hex characters on their own: the shape of some cloud resource keys.
  [/\b[0-9a-f]{32}\b/gi, REDACTED],
];

/**
 * Whether `text` may hold one of SHAPES: false only for text in which none can match. Each check
 * is a piece that the shape of the same line needs, looked for in the lowercased text (so a
 * superset: case does not matter here) unless said otherwise. This runs on every log line, the
 * access line of every request included, so it avoids one case-insensitive regular expression with
 * these thirteen alternatives: on a 440-character poll line (a sealed video id in its path) that
 * regex took ~8 us, these plain substring searches and the loops below take a fraction of it.
 * The pieces a random base64url id contains by chance ("key", "eyJ", "sk-" inside a word) are
 * checked together with what their shape needs next to them: with the bare pieces about one sealed
 * id in ten sent its every access line through all the shapes (~20 us each).
 */
export function mayHoldShape(text: string): boolean {
  const l = text.toLowerCase();
  for (const piece of SHAPE_PIECES) if (l.includes(piece)) return true;
  // "Key" and "Token" as Authorization schemes, and "api key provided", have whitespace after the
  // word; as parameters (key=, access_token=) they hold "=", a piece above.
  if (wordBeforeSpace(l, 'key') || wordBeforeSpace(l, 'token')) return true;
  return hasJwtStart(l) || hasKeyPrefix(text) || hasHexRun(l, 16);
}

const SHAPE_PIECES = ['=', 'bearer', 'basic', '-----begin', 'aiza', 'ya29.', 'akia', 'asia'];

/** The whitespace of the shapes' `\s`, tested one character at a time. */
const SPACE = /\s/;

function wordBeforeSpace(l: string, word: string): boolean {
  for (let i = l.indexOf(word); i >= 0; i = l.indexOf(word, i + 1)) {
    const after = i + word.length;
    if (after < l.length && SPACE.test(l[after]!)) return true;
  }
  return false;
}

/** A JWT's start: "eyJ", at least six base64url characters, then a dot. */
function hasJwtStart(l: string): boolean {
  for (let i = l.indexOf('eyj'); i >= 0; ) {
    let end = i + 3;
    while (end < l.length && isBase64UrlLower(l.charCodeAt(end))) end++;
    if (end - i - 3 >= 6 && l.charCodeAt(end) === 0x2e) return true;
    // Every later "eyj" of this run ends at the same place with fewer characters before it, so none
    // passes where this one failed: the search goes on after the run, which is then read once
    // (searching from i + 1 read a run of "eyj" once per "eyj").
    i = l.indexOf('eyj', end);
  }
  return false;
}

/**
 * A prefixed key's start: "sk", "rk", "pk" or "ak", then "-" or "_", at the start of a word.
 * Looked for in `text` itself, as the shape is case-sensitive, so the word start is judged on the
 * very character the shape's `\b` sees (lowercasing can turn a sign such as U+212A into a letter).
 */
function hasKeyPrefix(text: string): boolean {
  for (let i = text.indexOf('k', 1); i >= 0; i = text.indexOf('k', i + 1)) {
    const next = text.charCodeAt(i + 1);
    if ((next === 0x2d || next === 0x5f) && 'srpa'.includes(text[i - 1]!) && (i < 2 || !isWordChar(text.charCodeAt(i - 2)))) return true;
  }
  return false;
}

const isWordChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
const isBase64UrlLower = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x2d;
const isHexDigit = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/**
 * Whether `l` holds `n` hex digits (of either case) in a row. Such a run covers at least one position
 * that is a multiple of `n` (counting from n - 1), so only those are probed, and a run is measured
 * only around a probe that is a hex digit.
 */
export function hasHexRun(l: string, n: number): boolean {
  for (let i = n - 1; i < l.length; i += n) {
    if (!isHexDigit(l.charCodeAt(i))) continue;
    let start = i;
    let end = i;
    while (start > 0 && isHexDigit(l.charCodeAt(start - 1))) start--;
    while (end + 1 < l.length && isHexDigit(l.charCodeAt(end + 1))) end++;
    if (end - start + 1 >= n) return true;
    // The next probe lies past this run (a later run cannot include a character of this one).
    i = end;
  }
  return false;
}

/** One shape applied to every place of `text` it matches. */
export function applyShape(text: string, [re, to]: readonly [RegExp, Replacement]): string {
  // Two calls: replace() has an overload for a string and one for a function, none for either.
  return typeof to === 'string' ? text.replace(re, to) : text.replace(re, to);
}
