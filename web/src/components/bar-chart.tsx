/**
 * A bar chart drawn as plain SVG: a few dozen bars need no charting library (the smallest ones
 * weigh more than the whole console). Each bar has a <title> tooltip, and the figure a text
 * summary and a data table for screen readers.
 */
export interface Bar {
  label: string;
  value: number;
}

const W = 480;
const H = 250;
const PAD = { top: 12, right: 8, bottom: 70, left: 64 };

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((c) => c >= v) ?? v;
}

/** Axis labels: a day as MM-DD (the year is in the range above), long names cut. */
function short(label: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(label)) return label.slice(5);
  return label.length > 14 ? `${label.slice(0, 13)}…` : label;
}

export function BarChart({ title, bars, unit = '' }: { title: string; bars: Bar[]; unit?: string }) {
  const max = niceMax(Math.max(0, ...bars.map((b) => b.value)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const step = bars.length ? innerW / bars.length : innerW;
  const bw = Math.max(2, Math.min(48, step * 0.7));
  const fmt = (v: number) => (unit === '$' ? v.toFixed(v < 1 ? 4 : 2) : String(Math.round(v * 100) / 100));
  const ticks = [0, 0.5, 1].map((f) => f * max);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {bars.length === 0 ? (
        <p class="muted">No data in this range.</p>
      ) : (
        <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}: ${bars.map((b) => `${b.label} ${fmt(b.value)}`).join(', ')}`}>
          {ticks.map((t) => {
            const y = PAD.top + innerH - (t / max) * innerH;
            return (
              <g key={t}>
                <line x1={PAD.left} x2={W - PAD.right} y1={y} y2={y} class="grid" />
                <text x={PAD.left - 6} y={y + 4} text-anchor="end" class="axis">
                  {fmt(t)}
                </text>
              </g>
            );
          })}
          {bars.map((b, i) => {
            const h = (b.value / max) * innerH;
            const x = PAD.left + i * step + (step - bw) / 2;
            return (
              <g key={b.label}>
                <rect x={x} y={PAD.top + innerH - h} width={bw} height={Math.max(0, h)} class="bar">
                  <title>{`${b.label}: ${fmt(b.value)}`}</title>
                </rect>
                <text x={x + bw / 2} y={H - PAD.bottom + 14} text-anchor="end" transform={`rotate(-35 ${x + bw / 2} ${H - PAD.bottom + 14})`} class="axis">
                  {short(b.label)}
                </text>
              </g>
            );
          })}
        </svg>
      )}
    </figure>
  );
}
