/**
 * A channel's hand-overs in one process, kept so that what reaches Meta holds the channel's
 * rate in every sliding second even when the time between hand-over and Meta varies
 * (docs/channels.md "Throughput", docs/benchmarks.md "The hand-over window").
 *
 * Pacing reserves a channel's slots 1 000 / (0.95 × `throughput_mps`) ms apart, so any
 * `throughput_mps` + 1 consecutive slots span 1 000 / 0.95 ≈ 1 052.6 ms whatever the rate;
 * a second can only hold one message too many when the delays after the slot (lateness,
 * then transit to Meta) of two messages that far apart differ by more than those 52.6 ms.
 * That happens in a process's first second (code compiled for the first time, connections
 * to Meta being opened: lateness up to {@link PACING_LATENESS_MS} and transit up to ~40 ms
 * on a loaded machine). The rule: a message is handed over no sooner than
 * {@link HAND_OVER_GAP_MS} after every hand-over of its channel in this process whose slot
 * was {@link HAND_OVER_SLOT_SPAN_MS} or more before its own — a constraint that only
 * binds when an earlier message went late and a later one would go on time; otherwise
 * slots alone are further apart. The window cannot see another process's hand-overs, so
 * in a channel's first second in a process the dispatcher also holds its messages to
 * {@link FIRST_SECOND_LATENESS_MS} of lateness ({@link inFirstSecond}).
 *
 * @module
 */

/**
 * Slots at least this far apart, in ms, are `throughput_mps` or more slots apart for any
 * rate (those are 1 052.6 ms apart; a little less allows for slots stored to the ms).
 *
 * @category messaging
 */
export const HAND_OVER_SLOT_SPAN_MS = 1_050

/**
 * The least time, in ms, between the hand-overs of two messages of a channel whose slots
 * are {@link HAND_OVER_SLOT_SPAN_MS} or more apart: 1 000 plus 40 ms for the transit to
 * Meta to vary by.
 *
 * @category messaging
 */
export const HAND_OVER_GAP_MS = 1_040

/** One channel's hand-overs: `first`, the first one's time; `floor`, the latest of those already past the span of every later slot; `recent`, the others, by slot. */
interface ChannelHandOvers {
  readonly first: number
  floor: number
  readonly recent: Array<{ readonly slot: number; readonly at: number }>
}

/**
 * The hand-overs of one process, by channel uuid. Made by {@link makeHandOverWindow}; read
 * by {@link handOverWait}, written by {@link recordHandOver}. Holds, per channel, at most
 * the hand-overs of its last ~1 050 ms of slots.
 *
 * @category messaging
 */
export type HandOverWindow = Map<string, ChannelHandOvers>

/** An empty {@link HandOverWindow}. @category messaging */
export const makeHandOverWindow = (): HandOverWindow => new Map()

/**
 * How long, in ms, a message of `channelUuid` with pacing slot `slot` (epoch ms) must still
 * wait at `now` (epoch ms) before it is handed over: 0 when it may go now. Forgets the
 * channel's hand-overs too old to bind a later slot. Never fails.
 *
 * @category messaging
 */
export const handOverWait = (window: HandOverWindow, channelUuid: string, slot: number, now: number): number => {
  const handOvers = window.get(channelUuid)
  if (handOvers === undefined) return 0
  const { recent } = handOvers
  let passed = 0
  for (const each of recent) {
    if (each.slot > slot - HAND_OVER_SLOT_SPAN_MS) break
    handOvers.floor = Math.max(handOvers.floor, each.at)
    passed++
  }
  if (passed > 0) recent.splice(0, passed)
  return Math.max(0, handOvers.floor + HAND_OVER_GAP_MS - now)
}

/**
 * Notes that a message of `channelUuid` with pacing slot `slot` was handed over at `now`
 * (both epoch ms), for {@link handOverWait}. Never fails.
 *
 * @category messaging
 */
export const recordHandOver = (window: HandOverWindow, channelUuid: string, slot: number, now: number): void => {
  let handOvers = window.get(channelUuid)
  if (handOvers === undefined) {
    handOvers = { first: now, floor: -Infinity, recent: [] }
    window.set(channelUuid, handOvers)
  }
  const { recent } = handOvers
  // Nearly always the latest slot: kept in slot order by a short walk from the end.
  let index = recent.length
  while (index > 0 && (recent[index - 1]?.slot ?? -Infinity) > slot) index--
  recent.splice(index, 0, { slot, at: now })
}

/**
 * How late after its slot, in ms, the dispatcher may hand over a message of a channel in
 * the channel's first second in this process (no hand-over of it yet, or the first less
 * than 1 000 ms ago): then connections to Meta are being opened and a message can take
 * ~40 ms to get there, so a late one followed by another process's quick ones could put
 * one message too many into a second at Meta (docs/benchmarks.md "The hand-over window").
 *
 * @category messaging
 */
export const FIRST_SECOND_LATENESS_MS = 5

/**
 * Whether `now` (epoch ms) is in the first second of `channelUuid`'s hand-overs in this
 * process: none yet, or the first less than 1 000 ms before `now`.
 *
 * @category messaging
 */
export const inFirstSecond = (window: HandOverWindow, channelUuid: string, now: number): boolean => {
  const handOvers = window.get(channelUuid)
  return handOvers === undefined || now - handOvers.first < 1_000
}

/** The {@link HandOverWindow} of each transport: one per process's dispatcher and sends in the request alike. */
const windows = new WeakMap<object, HandOverWindow>()

/**
 * The {@link HandOverWindow} shared by everything that hands messages to `transport` (the
 * dispatcher and the sends in the request of one runtime use the same transport service).
 *
 * @category messaging
 */
export const handOverWindowOf = (transport: object): HandOverWindow => {
  let window = windows.get(transport)
  if (window === undefined) {
    window = makeHandOverWindow()
    windows.set(transport, window)
  }
  return window
}
