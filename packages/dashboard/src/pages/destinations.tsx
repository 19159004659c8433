import type { PageProps } from '../lib/types.js';

/** Destinations. */
export function DestinationsPage(_props: PageProps) {
  return <h1>Destinations</h1>;
}
