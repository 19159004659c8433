import type { FunctionComponent } from 'preact';
import type { PageProps } from './lib/types.js';
import { OverviewPage } from './pages/overview.js';
import { SourcesPage } from './pages/sources.js';
import { DestinationsPage } from './pages/destinations.js';

/**
 * The pages, in the navigation's order: one line each, so adding a page is adding a line.
 * `path` is the route's first segment (`#/sources/...`).
 */
export const pages: readonly { path: string; label: string; page: FunctionComponent<PageProps> }[] = [
  { path: 'overview', label: 'Overview', page: OverviewPage },
  { path: 'sources', label: 'Sources', page: SourcesPage },
  { path: 'destinations', label: 'Destinations', page: DestinationsPage },
];
