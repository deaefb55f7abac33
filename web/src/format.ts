/** Unix seconds or an ISO string, shown in the reader's locale with the UTC offset implicit. */
export function when(v: number | string | null | undefined): string {
  if (v === null || v === undefined || v === '') return '—';
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v);
  return Number.isNaN(d.getTime()) ? String(v) : d.toLocaleString();
}

export function money(v: number | string | null | undefined): string {
  if (v === null || v === undefined || v === '') return '—';
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 2) : String(v);
}

export function text(v: unknown): string {
  return v === null || v === undefined || v === '' ? '—' : String(v);
}
