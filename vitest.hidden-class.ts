import { setFlagsFromString } from "node:v8"

/**
 * Whether V8 gave every one of `objects` the same hidden class (its "map": the layout of
 * its keys), for tests of code that builds many records of one shape in a hot path. A
 * record built as a spread followed by keys the spread did not have
 * (`{ ...message, chat_uuid }`) got a hidden class of its own each time on Node 20's V8,
 * ~2 KB per record that survived young-generation collections (docs/benchmarks.md
 * "Broadcasts"); one object literal naming every key shares one.
 *
 * Asks V8 through `%HaveSameMap`, a native call compiled here once; the V8 flag
 * `--allow-natives-syntax` it needs stays set in the test process (turning it off again could
 * break the function's lazy recompilation), and lets no other code do anything it could not.
 */
export const shareOneHiddenClass = (objects: ReadonlyArray<object>): boolean =>
  objects.every((object) => haveSameMap(objects[0]!, object))

setFlagsFromString("--allow-natives-syntax")
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean
// Compiled now, while the flag is known to be set.
haveSameMap({}, {})
