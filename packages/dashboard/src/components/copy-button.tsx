import { useState } from 'preact/hooks';

/** Copies a value to the clipboard and says so. */
export function CopyButton(props: { value: string; label: string }) {
  const [done, setDone] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setDone('Copied.');
    } catch {
      setDone('Copy was refused by the browser: select the text and copy it.');
    }
  };
  return (
    <>
      <button type="button" onClick={() => void copy()}>
        {props.label}
      </button>
      <span role="status" class="muted">
        {done ?? ''}
      </span>
    </>
  );
}
