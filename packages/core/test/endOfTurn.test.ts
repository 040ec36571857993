import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Option } from "effect"
import { endOfTurnQueue, groupedQueue } from "../src/storage/endOfTurn.js"

describe("endOfTurnQueue", () => {
  it.effect("answers the requests of one turn with one call, in the order they were asked", () =>
    Effect.gen(function* () {
      const groups: Array<ReadonlyArray<number>> = []
      const double = endOfTurnQueue((requests: ReadonlyArray<number>) => {
        groups.push([...requests])
        return requests.map((request) => Effect.succeed(request * 2))
      })
      const answers = yield* Effect.all([double(1), double(2), double(3)], { concurrency: "unbounded" })
      expect(answers).toEqual([2, 4, 6])
      expect(groups).toEqual([[1, 2, 3]])
      // A later turn is a new group.
      expect(yield* double(4)).toBe(8)
      expect(groups).toEqual([[1, 2, 3], [4]])
    }))

  it.effect("never answers synchronously: the answer comes at the end of the turn it was asked in", () =>
    Effect.gen(function* () {
      const identity = endOfTurnQueue((requests: ReadonlyArray<string>) => requests.map((request) => Effect.succeed(request)))
      let answered: string | undefined
      const fiber = Effect.runFork(Effect.map(identity("asked"), (answer) => (answered = answer)))
      expect(answered).toBeUndefined()
      yield* Fiber.join(fiber)
      expect(answered).toBe("asked")
    }))

  it.effect("gives each request its own answer, a failure to one only", () =>
    Effect.gen(function* () {
      const even = endOfTurnQueue((requests: ReadonlyArray<number>) =>
        requests.map((request) => (request % 2 === 0 ? Effect.succeed(request) : Effect.fail(`odd ${request}`)))
      )
      const outcomes = yield* Effect.all([1, 2, 3].map((request) => Effect.either(even(request))), { concurrency: "unbounded" })
      expect(outcomes.map((outcome) => (outcome._tag === "Right" ? outcome.right : outcome.left))).toEqual(["odd 1", 2, "odd 3"])
    }))

  it.effect("answers every request of the group with the defect when answering throws: none is left waiting", () =>
    Effect.gen(function* () {
      const broken = endOfTurnQueue((_: ReadonlyArray<number>): ReadonlyArray<Effect.Effect<number>> => {
        throw new Error("bug")
      })
      const exits = yield* Effect.all([broken(1), broken(2)].map(Effect.exit), { concurrency: "unbounded" })
      const defects = exits.map((exit) =>
        Exit.isFailure(exit) ? Option.map(Cause.dieOption(exit.cause), (defect) => (defect as Error).message) : Option.none()
      )
      expect(defects).toEqual([Option.some("bug"), Option.some("bug")])
      // The queue still works afterwards.
      const working = endOfTurnQueue((requests: ReadonlyArray<number>) => requests.map((request) => Effect.succeed(request)))
      expect(yield* working(5)).toBe(5)
    }))
})

describe("endOfTurnQueue and groupedQueue: the promise form", () => {
  it("a promise call joins the same group as the Effect calls of its turn, and resolves with its own answer", async () => {
    const groups: Array<ReadonlyArray<number>> = []
    const double = endOfTurnQueue((requests: ReadonlyArray<number>) => {
      groups.push([...requests])
      return requests.map((request) => Effect.succeed(request * 2))
    })
    const effectAnswer = Effect.runPromise(double(1))
    const promiseAnswers = Promise.all([double.promise(2), double.promise(3)])
    expect(await effectAnswer).toBe(2)
    expect(await promiseAnswers).toEqual([4, 6])
    expect(groups).toEqual([[1, 2, 3]])
  })

  it("a failure rejects with the error itself, a defect with the defect; an answer still to run is run first", async () => {
    const answers = groupedQueue((requests: ReadonlyArray<string>) =>
      requests.map((request) =>
        request === "fail" ? Effect.fail(new Error("refused")) : request === "die" ? Effect.die(new TypeError("a bug")) : Effect.delay(Effect.succeed(`later ${request}`), 5)), { windowMs: 1, maxSize: 10 })
    await expect(answers.promise("fail")).rejects.toThrow("refused")
    await expect(answers.promise("die")).rejects.toBeInstanceOf(TypeError)
    await expect(answers.promise("ok")).resolves.toBe("later ok")
  })

  it("a defect thrown by the group's answer rejects every promise of the group", async () => {
    const broken = groupedQueue((): ReadonlyArray<Effect.Effect<number>> => {
      throw new RangeError("the group failed")
    }, { windowMs: 0, maxSize: 10 })
    const settled = await Promise.allSettled([broken.promise(1), broken.promise(2)])
    expect(settled.map((each) => each.status === "rejected" && each.reason instanceof RangeError)).toEqual([true, true])
  })
})
