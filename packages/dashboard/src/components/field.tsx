import type { ComponentChildren } from 'preact';

/** A labelled form control with its hint and the server's error for it, announced with the control. */
export function Field(props: {
  id: string;
  label: string;
  error?: string | undefined;
  hint?: string;
  children: (described: ControlProps) => ComponentChildren;
}) {
  const hintId = props.hint ? `${props.id}-hint` : undefined;
  const errorId = props.error ? `${props.id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div class={props.error ? 'field field-invalid' : 'field'}>
      <label for={props.id}>{props.label}</label>
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {props.children({ id: props.id, 'aria-describedby': describedBy, 'aria-invalid': props.error ? true : undefined })}
      {props.error && (
        <p class="field-error" id={errorId} role="alert">
          {props.error}
        </p>
      )}
    </div>
  );
}

/** What a control inside a {@link Field} spreads onto itself. */
export interface ControlProps {
  id: string;
  'aria-describedby': string | undefined;
  'aria-invalid': true | undefined;
}
