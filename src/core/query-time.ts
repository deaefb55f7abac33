import { errors } from './errors.js';

const DAY_MS = 86_400_000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})/;
/** The end of an ISO 8601 timestamp that names its offset from UTC. */
const ZONED = /(?:Z|[+-]\d{2}:?\d{2})$/i;

/** Whether year-month-day is a day of the calendar (not 2024-02-30, which Date.parse reads as 1 March). */
function isCalendarDay(y: number, m: number, d: number): boolean {
  const probe = new Date(0);
  probe.setUTCFullYear(y, m - 1, d);
  return probe.getUTCFullYear() === y && probe.getUTCMonth() === m - 1 && probe.getUTCDate() === d;
}

/**
 * A time range bound from a query parameter, shared by every report and list that takes one:
 * `YYYY-MM-DD` (a UTC day; with `dayEnd`, the end of that day, so a bare `to` includes it) or an
 * ISO 8601 timestamp. Undefined when absent or empty; a 400 naming `param` for anything else.
 * A day that is not on the calendar is refused rather than rolled over into the next month, and a
 * timestamp without an offset is UTC, as a bare date is: read by Date.parse it would be the server's
 * local time, and the same query would cover different hours on instances in different time zones.
 */
export function queryTime(v: unknown, param: string, dayEnd = false): number | undefined {
  if (v === undefined || v === '') return undefined;
  const text = String(v);
  const date = DATE.exec(text);
  const day = date !== null && text.length === 10;
  const stamp = date !== null && text[10] === 'T';
  let t = NaN;
  if (date && (day || stamp) && isCalendarDay(Number(date[1]), Number(date[2]), Number(date[3])))
    t = day ? Date.parse(`${text}T00:00:00Z`) : Date.parse(ZONED.test(text) ? text : `${text}Z`);
  if (!Number.isFinite(t)) throw errors.invalidRequest(`'${param}' must be a date (YYYY-MM-DD) or an ISO 8601 timestamp.`, param);
  return day && dayEnd ? t + DAY_MS : t;
}
