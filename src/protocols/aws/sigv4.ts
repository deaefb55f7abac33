import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * AWS Signature Version 4 through Smithy's signer (the one the AWS SDK uses), shared by the Bedrock
 * adapter and its simulator so both sides compute the signature the same, well-kept way.
 */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export function awsSigner(credentials: AwsCredentials, region: string, service = 'bedrock'): SignatureV4 {
  return new SignatureV4({ credentials, region, service, sha256: Hash.bind(null, 'sha256'), uriEscapePath: true });
}

export interface SignInput {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Signs a request and returns every header to send (without `host`, which the HTTP client sets identically). */
export async function signRequest(signer: SignatureV4, input: SignInput, signingDate?: Date): Promise<Record<string, string>> {
  const u = new URL(input.url);
  const query: Record<string, string> = {};
  u.searchParams.forEach((v, k) => (query[k] = v));
  const request = new HttpRequest({
    method: input.method,
    protocol: u.protocol,
    hostname: u.hostname,
    port: u.port ? Number(u.port) : undefined,
    path: u.pathname,
    query,
    headers: { ...lower(input.headers), host: u.host },
    body: input.body,
  });
  const signed = await signer.sign(request, signingDate ? { signingDate } : undefined);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k] = v;
  return out;
}

function lower(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}

export interface ReceivedRequest {
  method: string;
  /** Path exactly as received (still percent-encoded). */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Server side of SigV4, for the simulator: recomputes the signature over what actually arrived (the
 * signed headers it names, the body's real hash) and compares. Returns a reason when it does not match.
 */
export async function verifySignature(
  req: ReceivedRequest,
  lookup: (accessKeyId: string) => string | undefined,
  expect: { region: string; service: string; maxSkewMs?: number; now?: number },
): Promise<string | undefined> {
  const auth = req.headers['authorization'] ?? '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return 'malformed Authorization header';
  const [, keyId, day, region, service, signedList, signature] = m;
  const secret = lookup(keyId!);
  if (!secret) return 'unknown access key';
  if (region !== expect.region || service !== expect.service) return `credential scope ${region}/${service} is not ${expect.region}/${expect.service}`;
  const amzDate = req.headers['x-amz-date'] ?? '';
  const d = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!d || amzDate.slice(0, 8) !== day) return 'missing or inconsistent x-amz-date';
  const signingDate = new Date(Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, +d[4]!, +d[5]!, +d[6]!));
  if (Math.abs((expect.now ?? Date.now()) - signingDate.getTime()) > (expect.maxSkewMs ?? 5 * 60_000)) return 'signature expired';

  const headers: Record<string, string> = {};
  for (const name of signedList!.split(';')) {
    // The payload hash is recomputed from the body that arrived, so a changed body cannot pass.
    if (name === 'x-amz-content-sha256') continue;
    const v = req.headers[name];
    if (v === undefined) return `signed header ${name} missing`;
    headers[name] = v;
  }
  const query: Record<string, string> = {};
  req.query.forEach((v, k) => (query[k] = v));
  const signer = awsSigner(
    { accessKeyId: keyId!, secretAccessKey: secret, sessionToken: req.headers['x-amz-security-token'] },
    region!,
    service,
  );
  const host = req.headers['host'] ?? '';
  const signed = await signer.sign(
    new HttpRequest({ method: req.method, protocol: 'http:', hostname: host.split(':')[0], path: req.path, query, headers, body: req.body }),
    { signingDate, signableHeaders: new Set(signedList!.split(';')) },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(signed.headers['authorization'] ?? '')?.[1];
  if (req.headers['x-amz-content-sha256'] && req.headers['x-amz-content-sha256'] !== signed.headers['x-amz-content-sha256'])
    return 'x-amz-content-sha256 does not match the body';
  return expected === signature ? undefined : 'signature mismatch';
}
