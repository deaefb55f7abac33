import { useState } from 'preact/hooks';

/** Copies a value to the clipboard and says so (politely, for screen readers). */
export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [done, setDone] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setDone('Copied');
    } catch {
      setDone('Copy failed: select the text and copy it');
    }
  };
  return (
    <span>
      <button type="button" onClick={copy}>
        {label}
      </button>
      <span class="muted" aria-live="polite">
        {' '}
        {done}
      </span>
    </span>
  );
}
