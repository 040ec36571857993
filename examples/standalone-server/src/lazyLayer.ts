import { Effect, Layer } from "effect"

/**
 * A layer whose module is imported only when the layer is built: `load` (a dynamic
 * `import()`) runs then, and `build` makes the layer from the module. For the drivers a
 * server uses only when configured to (the MongoDB driver takes about a second to load; the
 * Redis client adds ~20 MiB to a bare Node process's RSS: docs/benchmarks.md "Memory"), so a
 * server without them never loads them. The bundle keeps each such module in its own chunk
 * (docs/standalone-server.md "Builds"). A failing import is a defect.
 */
export const layerOnImport = <Module, Out, E, R>(
  load: () => Promise<Module>,
  build: (module: Module) => Layer.Layer<Out, E, R>
): Layer.Layer<Out, E, R> => Layer.unwrapEffect(Effect.map(Effect.promise(load), build))
