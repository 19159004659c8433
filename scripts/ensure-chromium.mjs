#!/usr/bin/env node
// The dashboard's browser tests drive Debian's `chromium` package (never a downloaded browser
// build). Installs it with apt-get when it is missing and this runs as root (CI); otherwise
// says what to run and exits non-zero.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const chromiumPath = '/usr/bin/chromium';

/** Makes sure Chromium is installed; answers false (having said why) when it could not be. */
export function ensureChromium() {
  if (existsSync(chromiumPath)) return true;
  if (process.getuid?.() !== 0) {
    console.error(
      `${chromiumPath} is missing; the dashboard's browser tests need it. Install it with:\n  sudo apt-get update && sudo apt-get install -y chromium`,
    );
    return false;
  }
  console.log(`> apt-get install chromium (${chromiumPath} is missing)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    if (spawnSync('apt-get', args, { stdio: 'inherit', env }).status !== 0) {
      console.error(`apt-get ${args.join(' ')} failed; install chromium by hand.`);
      return false;
    }
  }
  return existsSync(chromiumPath);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) process.exit(ensureChromium() ? 0 : 1);
