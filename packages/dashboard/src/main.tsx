import { render } from 'preact';
import { App } from './app.js';
import { callEarly } from './lib/early-calls.js';
import { parseHash } from './lib/router.js';
import { readToken } from './lib/token.js';
import { pages } from './nav.js';
import 'uplot/dist/uPlot.min.css';
import './styles.css';

// Signed in: the session check and the first page's data are asked for at once, before the first render.
if (readToken() !== null) {
  callEarly(['/session']);
  (pages.find((p) => p.path === parseHash(location.hash)[0]) ?? pages[0]!).openEarly?.();
}

render(<App />, document.getElementById('app')!);
