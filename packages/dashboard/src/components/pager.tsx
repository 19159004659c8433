import { useState } from 'preact/hooks';

/**
 * Cursor paging as the admin API does it (`after` = the previous page's `next`): the cursors
 * of the pages seen are kept, so "Previous" goes back without the API paging backwards.
 */
export function useCursor() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    /** The `after` of the page shown, or undefined on the first. */
    after: cursors[cursors.length - 1],
    page: cursors.length + 1,
    next: (cursor: string) => setCursors([...cursors, cursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([]),
  };
}

/** Previous and next buttons for a {@link useCursor}, labelled with what they page through. */
export function Pager(props: { label: string; cursor: ReturnType<typeof useCursor>; next: string | null | undefined }) {
  const { cursor } = props;
  if (cursor.page === 1 && !props.next) return null;
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" disabled={cursor.page === 1} onClick={cursor.previous}>
        Previous page
      </button>
      <span class="muted">Page {cursor.page}</span>
      <button type="button" disabled={!props.next} onClick={() => props.next && cursor.next(props.next)}>
        Next page
      </button>
    </nav>
  );
}
