import type { FunctionComponent } from 'preact';
import type { PageProps } from './lib/types.js';
import { OverviewPage, openOverviewEarly } from './pages/overview.js';
import { SourcesPage } from './pages/sources.js';
import { DestinationsPage } from './pages/destinations.js';
import { DeliveriesPage } from './pages/deliveries.js';
import { DeadLettersPage } from './pages/dead-letters.js';
import { RegulationsPage } from './pages/regulations.js';
import { AudiencesPage } from './pages/audiences.js';

/**
 * The pages, in the navigation's order: one line each, so adding a page is adding a line.
 * `path` is the route's first segment (`#/sources/...`). `openEarly`: what a page asks for
 * first, started with the session check when the app opens on it (lib/early-calls.ts).
 */
export const pages: readonly { path: string; label: string; page: FunctionComponent<PageProps>; openEarly?: () => void }[] = [
  { path: 'overview', label: 'Overview', page: OverviewPage, openEarly: openOverviewEarly },
  { path: 'sources', label: 'Sources', page: SourcesPage },
  { path: 'destinations', label: 'Destinations', page: DestinationsPage },
  { path: 'deliveries', label: 'Deliveries', page: DeliveriesPage },
  { path: 'dead-letters', label: 'Dead letters', page: DeadLettersPage },
  { path: 'regulations', label: 'Deletion requests', page: RegulationsPage },
  { path: 'audiences', label: 'Audiences', page: AudiencesPage },
];
