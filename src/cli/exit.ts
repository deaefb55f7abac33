/**
 * Exit codes a script can rely on (documented in README, "Client CLI"). One table, used by every
 * command, whether the failure came from the local store or from the HTTP API.
 */
export const EXIT = {
  ok: 0,
  /** Unexpected failure: the gateway answered 5xx, could not be reached, or a local I/O error. */
  failure: 1,
  /** The command line or the request was refused as invalid (bad flags, 400, 409, 413, 422). */
  usage: 2,
  /** 401/403: the key is missing, wrong, revoked or not allowed this model or action. */
  auth: 3,
  /** 404: no such video, model, account or key. */
  notFound: 4,
  /** The video job finished with status "failed". */
  jobFailed: 5,
  /** 402 (balance too low) or 429 still refused after the retries. */
  quota: 6,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the CLI reports as one line on stderr and a documented exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function exitCodeForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 402 || status === 429) return EXIT.quota;
  if (status >= 400 && status < 500) return EXIT.usage;
  return EXIT.failure;
}
