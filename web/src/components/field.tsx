import type { ComponentChildren } from 'preact';

/** A labelled form control: the label is tied to the control, the hint read with it. */
export function Field({ id, label, hint, children }: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint && (
        <small id={`${id}-hint`} class="muted">
          {hint}
        </small>
      )}
    </div>
  );
}
