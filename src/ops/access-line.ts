import pino, { type Logger } from 'pino';

/** The access line's fields, in the order they are written. */
export interface AccessFields {
  request_id: string;
  method: string;
  path: string;
  status: number;
  ms: number;
}

export type AccessLineWriter = (f: AccessFields) => void;

export const ACCESS_MESSAGE = 'request completed';

// pino.symbols is pino's documented way for integrations to reach a logger's state. These hold what
// pino's own `info` puts around the logged fields: the level prefix, the time, the bindings, the end.
const S = pino.symbols as typeof pino.symbols & { msgPrefixSym: symbol };
type Internals = Record<symbol, unknown>;

/**
 * Writes the access line (one per request) as the same bytes `logger.info(fields, 'request
 * completed')` writes, without pino's generic path: per field, that looks up serializers and
 * redaction stringifiers, checks own properties and escapes the key. The five fields are known, so
 * the line is one string concatenation. It goes to the logger's own stream, so the sink's
 * redaction (services.ts) still applies to it like to every other line.
 *
 * Used only when the logger is a plain pino logger whose `info` would write exactly that: nothing
 * that changes a line (log formatter, mixin, message prefix, nested key, stream hook, a serializer
 * or redaction path on one of the fields, a stream that wants metadata). Any other logger gets the
 * plain `info` call.
 */
export function accessLineWriter(logger: Logger): AccessLineWriter {
  const viaInfo: AccessLineWriter = (f) => logger.info(f, ACCESS_MESSAGE);
  if (!isPlain(logger)) return viaInfo;
  const internals = logger as unknown as Internals;
  const time = internals[S.timeSym] as () => string;
  const stream = internals[S.streamSym] as { write(line: string): unknown };
  const head = (internals[S.lsCacheSym] as Record<number, string>)[logger.levels.values.info!]!;
  const end = internals[S.endSym] as string;
  const chindings = internals[S.chindingsSym] as string;
  return (f) => {
    if (!logger.isLevelEnabled('info')) return;
    // A short string with a lone surrogate half is the one case where pino's own escaping (used
    // below 101 characters on Node < 25) and JSON.stringify differ; paths come from the HTTP
    // parser as Latin-1 and never have one, but such a line still goes the plain way.
    if (f.path.length <= 100 && LONE_SURROGATE.test(f.path)) return viaInfo(f);
    stream.write(
      `${head}${time()}${chindings},"request_id":${JSON.stringify(f.request_id)},"method":${JSON.stringify(f.method)},"path":${JSON.stringify(f.path)},"status":${num(f.status)},"ms":${num(f.ms)},"msg":"${ACCESS_MESSAGE}"${end}`,
    );
  };
}

// With the u flag a pair is one code point, so only a half on its own matches.
const LONE_SURROGATE = /[\ud800-\udfff]/u;

/** Numbers as pino writes them: a non-finite one is null. */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

const FIELDS = ['request_id', 'method', 'path', 'status', 'ms'];

function isPlain(logger: Logger): boolean {
  const l = logger as unknown as Internals;
  if (typeof l[S.timeSym] !== 'function' || typeof l[S.chindingsSym] !== 'string' || typeof l[S.endSym] !== 'string') return false;
  const lsCache = l[S.lsCacheSym] as Record<number, string> | undefined;
  const stream = l[S.streamSym] as ({ write?: unknown } & Internals) | undefined;
  if (typeof lsCache?.[logger.levels?.values.info ?? -1] !== 'string' || typeof stream?.write !== 'function' || stream[S.needsMetadataGsym] === true) return false;
  const formatters = l[S.formattersSym] as { log?: unknown } | undefined;
  const hooks = l[S.hooksSym] as { streamWrite?: unknown } | undefined;
  if (formatters?.log || hooks?.streamWrite || l[S.mixinSym] || l[S.nestedKeySym] || l[S.msgPrefixSym] !== undefined) return false;
  if (l[S.messageKeySym] !== 'msg' || FIELDS.includes(l[S.errorKeySym] as string)) return false;
  const serializers = (l[S.serializersSym] ?? {}) as Record<string, unknown>;
  const stringifiers = (l[S.stringifiersSym] ?? {}) as Record<string | symbol, unknown>;
  if (stringifiers[S.wildcardFirstSym] || stringifiers.msg || serializers.msg) return false;
  return FIELDS.every((k) => !serializers[k] && !stringifiers[k]);
}
