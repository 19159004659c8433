import type { PageProps } from '../lib/types.js';

/** Sources. */
export function SourcesPage(_props: PageProps) {
  return <h1>Sources</h1>;
}
