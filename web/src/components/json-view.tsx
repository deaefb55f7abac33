/** Any JSON value, pretty-printed in a scrollable, focusable block (keyboard users can scroll it). */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" tabIndex={0} aria-label={label}>
      {JSON.stringify(value ?? null, null, 2)}
    </pre>
  );
}
