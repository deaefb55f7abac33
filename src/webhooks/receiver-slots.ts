/**
 * Who may have a delivery in flight, and which receivers are backed off. The dispatcher's slots are
 * shared fairly: at most `perAccount` deliveries of one account and `perOrigin` to one receiver
 * (`host:port`) at once, so no tenant can hold every slot by pointing its jobs at a receiver that
 * never answers.
 *
 * Back-off of receivers that do not answer at all: after UNREACHABLE_STREAK timeouts or connection
 * failures in a row, one account's deliveries to one receiver are put off (without spending
 * attempts) for PAUSE_BASE_MS, doubling with every further failure up to PAUSE_MAX_MS, and then
 * tried one at a time until one gets an answer; the receiver as a whole is then also limited to one
 * delivery in flight, for every account, until it answers someone. The state is per instance.
 */
const UNREACHABLE_STREAK = 3;
const PAUSE_BASE_MS = 30_000;
const PAUSE_MAX_MS = 10 * 60_000;
/** Receivers remembered as failing, at most (the oldest entry is forgotten first): memory stays bounded. */
const MAX_TRACKED = 10_000;

/** `host:port` of a target, the unit the per-receiver cap and back-off apply to. */
export function originKey(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  } catch {
    return '(invalid)';
  }
}

/** One delivery's place in the bookkeeping: its account, its receiver, and the pair of both. */
export interface Slot {
  account: string;
  origin: string;
  pair: string;
}

export function slotOf(accountId: string, url: string): Slot {
  const origin = originKey(url);
  return { account: accountId, origin, pair: `${accountId} ${origin}` };
}

export class ReceiverSlots {
  private readonly byAccount = new Map<string, number>();
  private readonly byOrigin = new Map<string, number>();
  /** In flight per account and receiver, for the one-at-a-time probe after a pause. */
  private readonly byPair = new Map<string, number>();
  /** Consecutive timeouts or connection failures per receiver, whichever account's delivery met them. */
  private readonly originStreak = new Map<string, number>();
  /** Per account and receiver: consecutive timeouts or connection failures, and the end of the pause they earned. */
  private readonly pauses = new Map<string, { streak: number; until: number }>();

  constructor(
    private readonly perAccount: number,
    private readonly perOrigin: number,
  ) {}

  /** Accounts with a delivery in flight (the scan reads past their capped rows). */
  get busyAccounts(): number {
    return this.byAccount.size;
  }

  /** When the pause of this account's deliveries to this receiver ends, if one is running at `now`. */
  pausedUntil(s: Slot, now: number): number | undefined {
    const pause = this.pauses.get(s.pair);
    return pause && pause.until > now ? pause.until : undefined;
  }

  hasRoom(s: Slot): boolean {
    if ((this.byAccount.get(s.account) ?? 0) >= this.perAccount) return false;
    const originCap = (this.originStreak.get(s.origin) ?? 0) >= UNREACHABLE_STREAK ? 1 : this.perOrigin;
    if ((this.byOrigin.get(s.origin) ?? 0) >= originCap) return false;
    // After a pause has run out: one delivery at a time until the receiver answers again.
    if ((this.pauses.get(s.pair)?.streak ?? 0) >= UNREACHABLE_STREAK && (this.byPair.get(s.pair) ?? 0) >= 1) return false;
    return true;
  }

  take(s: Slot): void {
    bump(this.byAccount, s.account, 1);
    bump(this.byOrigin, s.origin, 1);
    bump(this.byPair, s.pair, 1);
  }

  give(s: Slot): void {
    bump(this.byAccount, s.account, -1);
    bump(this.byOrigin, s.origin, -1);
    bump(this.byPair, s.pair, -1);
  }

  /** Keeps the back-off state: any answer clears it; a timeout or connection failure extends the streak. */
  note(s: Slot, answered: boolean, unreachable: boolean, now: number): void {
    if (answered) {
      this.originStreak.delete(s.origin);
      this.pauses.delete(s.pair);
      return;
    }
    if (!unreachable) return;
    remember(this.originStreak, s.origin, (this.originStreak.get(s.origin) ?? 0) + 1);
    const streak = (this.pauses.get(s.pair)?.streak ?? 0) + 1;
    const until = streak >= UNREACHABLE_STREAK ? now + Math.min(PAUSE_MAX_MS, PAUSE_BASE_MS * 2 ** (streak - UNREACHABLE_STREAK)) : 0;
    remember(this.pauses, s.pair, { streak, until });
  }
}

function bump(m: Map<string, number>, key: string, by: number): void {
  const n = (m.get(key) ?? 0) + by;
  if (n > 0) m.set(key, n);
  else m.delete(key);
}

/** Sets `key` as the newest entry and forgets the oldest beyond MAX_TRACKED. */
function remember<V>(m: Map<string, V>, key: string, value: V): void {
  m.delete(key);
  m.set(key, value);
  if (m.size > MAX_TRACKED) m.delete(m.keys().next().value as string);
}
