// The layering of packages/server/src, checked by `npm run depcheck` (and so by `npm test`).
// docs/architecture.md ("Layers") explains the order; keep the two in step.

/**
 * Stages from the bottom up: a module may import from its own stage and the stages on the
 * lines before it, never from a stage on a line after it.
 */
const layers = [
  ['util', 'model'],
  ['errors'],
  // The configuration's types, defaults and shared rules; its validation, which asks the
  // destination registry for each type's settings schema, sits above destinations.
  ['config/model.ts', 'config/defaults.ts', 'config/schema-rules.ts', 'config/delivery-policy-schema.ts', 'config/retention-schema.ts'],
  ['store'],
  ['destinations'],
  ['config/schema.ts', 'config/filter-schema.ts', 'config/redact.ts', 'config/yaml-errors.ts', 'config/load.ts', 'routing', 'control'],
  ['delivery'],
  ['events'],
  ['ingest', 'audiences', 'regulations', 'replay', 'retention'],
  ['admin', 'lifecycle', 'http', 'metrics', 'dashboard'],
  ['app.ts'],
  ['cli', 'index.ts'],
];

const src = '^packages/server/src/';
/** A path pattern for a stage: a folder, or a single module at the top of src/. */
const at = (stage) => (stage.endsWith('.ts') ? `${src}${stage.replaceAll('.', '[.]')}$` : `${src}${stage}/`);
const anyOf = (stages) => stages.map(at);

const layerRules = layers.slice(0, -1).map((stages, i) => ({
  name: `layer-${stages.map((s) => s.replace('.ts', '').replace('/', '.')).join('-')}`,
  comment: `${stages.join(', ')} import nothing from a stage above (docs/architecture.md, "Layers")`,
  severity: 'error',
  from: { path: anyOf(stages) },
  to: { path: anyOf(layers.slice(i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle, even one of types only, hides which module is the lower one.',
      severity: 'error',
      from: { path: '^packages/[^/]+/src/' },
      to: { circular: true },
    },
    {
      name: 'ingest-imports-no-destination',
      comment: 'Ingestion stores what arrived; what a destination does with it is not its concern.',
      severity: 'error',
      from: { path: `${src}ingest/` },
      to: { path: `${src}destinations/` },
    },
    {
      name: 'webhooks-behind-the-registry',
      comment:
        'What is Webhooks-specific is imported only from its own folder, the registry, the public entry point and the ferry dev demo (which is about webhooks): every other stage asks the registry.',
      severity: 'error',
      from: { path: src, pathNot: [`${src}destinations/webhooks/`, `${src}destinations/registry[.]ts$`, `${src}index[.]ts$`, `${src}cli/dev[.]ts$`] },
      to: { path: `${src}destinations/webhooks/` },
    },
    {
      name: 'store-imports-only-below',
      comment: 'The store imports its own modules, model/, util/ and the configuration types (config/model.ts), nothing of a stage.',
      severity: 'error',
      from: { path: `${src}store/` },
      to: { path: `${src}`, pathNot: [`${src}(store|model|util)/`, `${src}config/model[.]ts$`] },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['/dist/', '/node_modules/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.eslint.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['ferry-source', 'import', 'require', 'default'] },
  },
};
