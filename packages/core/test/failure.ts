import { Effect } from "effect"

/**
 * The error `effect` fails with, like `Effect.flip`, but an unexpected success fails the
 * test with a short message instead of the success value: vitest 3.2's stack parser can
 * hang on a long failure message that holds ISO timestamps (`…T00:00:00.000Z`) next to
 * many nested objects, which is what a flipped record looks like.
 */
export const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<E, string, R> =>
  Effect.flip(Effect.as(effect, "expected a failure, but the effect succeeded"))
