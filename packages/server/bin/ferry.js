#!/usr/bin/env node
// The command lives in the build output; this shim exists so npm can link the bin before the build has run.
await import('../dist/cli/main.js');
