import type { ComponentChildren } from 'preact';
import { describeError } from '../lib/api.js';

/** An error shown where the content would be, announced to screen readers. */
export function ErrorNotice(props: { error: unknown }) {
  return (
    <p class="notice notice-error" role="alert">
      {describeError(props.error)}
    </p>
  );
}

/** A polite status line (saved, sent...). */
export function StatusNotice(props: { children: ComponentChildren }) {
  return (
    <p class="notice notice-ok" role="status">
      {props.children}
    </p>
  );
}

/** Shown while the first answer is on its way. */
export function Loading() {
  return (
    <p class="muted" role="status">
      Loading…
    </p>
  );
}
