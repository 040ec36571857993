import type { Faker } from "@faker-js/faker"
// One entry point per locale: loading "@faker-js/faker" itself loads every locale (~0.9 s).
import { faker as fakerDE } from "@faker-js/faker/locale/de"
import { faker as fakerEN_GB } from "@faker-js/faker/locale/en_GB"
import { faker as fakerEN_IN } from "@faker-js/faker/locale/en_IN"
import { faker as fakerEN_US } from "@faker-js/faker/locale/en_US"
import { faker as fakerES } from "@faker-js/faker/locale/es"
import { faker as fakerES_MX } from "@faker-js/faker/locale/es_MX"
import { faker as fakerFR } from "@faker-js/faker/locale/fr"
import { faker as fakerPT_BR } from "@faker-js/faker/locale/pt_BR"
import type { ChatPatch, ChatStatus, ContactDetails, MessageDirection } from "@switchboard/core"
import { parsePhoneNumberFromString } from "libphonenumber-js/max"

// Synthetic data of `seed` (docs/standalone-server.md "seed"): contacts from eight
// countries with names, e-mails and cities of their locale and valid mobile numbers;
// chats with a realistic spread of statuses, assignees, favorites, unread counts and
// last-message times over the past six months, and a short conversation each. Pure
// generation: nothing here touches the store.

/** A generated contact: E.164 phone, details, and indexes into the group and label pools. */
export interface SeedContact {
  readonly phone: string
  readonly details: Partial<ContactDetails>
  readonly groups: ReadonlyArray<number>
  readonly labels: ReadonlyArray<number>
}

/** A generated message, times in ms since the epoch. */
export interface SeedMessage {
  readonly direction: MessageDirection
  readonly text: string
  readonly at: number
}

/** A generated chat: its attributes, creation time and messages (oldest first). */
export interface SeedChat {
  readonly attributes: ChatPatch & { readonly status: ChatStatus }
  readonly createdAt: number
  readonly messages: ReadonlyArray<SeedMessage>
}

/** Names of the groups `seed` puts contacts in (created when missing). */
export const SEED_GROUPS: ReadonlyArray<string> = ["Customers", "Newsletter", "Trial users", "Partners", "Beta testers"]

/** Names and colors of the labels `seed` puts on contacts (created while `label_limit` allows). */
export const SEED_LABELS: ReadonlyArray<{ readonly name: string; readonly color: string }> = [
  { name: "VIP", color: "#d4af37" },
  { name: "Lead", color: "#1e90ff" },
  { name: "Support", color: "#ff8c00" },
  { name: "Billing", color: "#2e8b57" },
  { name: "Churn risk", color: "#dc143c" },
  { name: "Wholesale", color: "#6a5acd" }
]

/** How far back last messages go, in days. */
export const SEED_HISTORY_DAYS = 180

/**
 * A deterministic generator of seed data. With the same `seed` (and the same `now`) it
 * produces the same contacts and chats in the same order; without one it is random.
 * Phones are unique within one generator and pass the same libphonenumber-js validation
 * as the API (`isValid()` of the `max` metadata).
 */
export const makeSeedGenerator = (options: { readonly seed: number | undefined; readonly now: number }) => {
  const locales = COUNTRIES.map((country) => country.faker)
  if (options.seed !== undefined) locales.forEach((faker, index) => faker.seed(options.seed! * 31 + index))
  else locales.forEach((faker) => faker.seed())
  const random = fakerEN_US
  const agents = Array.from({ length: 8 }, () =>
    `${random.person.firstName()}.${random.person.lastName()}`.toLowerCase().replace(/[^a-z.]/g, "")
  )
  const phones = new Set<string>()

  const contact = (): SeedContact => {
    const country = COUNTRIES[weighted(random, COUNTRY_WEIGHTS)]!
    const { faker } = country
    const firstName = faker.person.firstName()
    const lastName = faker.person.lastName()
    const details: Partial<ContactDetails> = {
      first_name: firstName,
      last_name: lastName,
      email: random.number.float() < 0.7 ? faker.internet.email({ firstName, lastName }).toLowerCase() : null,
      city: faker.location.city(),
      zip: random.number.float() < 0.5 ? faker.location.zipCode() : null,
      country: country.code
    }
    return { phone: uniquePhone(country), details, groups: subset(random, SEED_GROUPS.length, 0.25), labels: subset(random, SEED_LABELS.length, 0.15) }
  }

  const uniquePhone = (country: Country): string => {
    for (;;) {
      const prefix = country.prefixes[random.number.int({ max: country.prefixes.length - 1 })]!
      const phone = prefix.start + random.string.numeric({ length: prefix.digits, allowLeadingZeros: prefix.leadingZero })
      if (phones.has(phone)) continue
      const parsed = parsePhoneNumberFromString(phone)
      if (parsed === undefined || !parsed.isValid() || parsed.number !== phone) continue
      phones.add(phone)
      return phone
    }
  }

  /**
   * Chat `index` of `total`: last messages rise with `index`, from about six months ago to
   * now (so the store's indexes on `last_message_at` grow at their end: see
   * docs/standalone-server.md), denser towards now (the age is the square of the remaining
   * fraction).
   */
  const chat = (index: number, total: number): SeedChat => {
    const remaining = 1 - (index + random.number.float()) / total
    const lastAt = options.now - Math.floor(remaining ** 2 * SEED_HISTORY_DAYS * 86_400_000)
    const count = 1 + weighted(random, [35, 30, 20, 15])
    const messages: Array<SeedMessage> = []
    let at = lastAt
    let direction: MessageDirection = random.number.float() < 0.6 ? "inbound" : "outbound"
    for (let index = 0; index < count; index++) {
      messages.unshift({ direction, text: messageText(random, direction), at })
      at -= random.number.int({ min: 30_000, max: 6 * 3_600_000 })
      direction = direction === "inbound" ? "outbound" : "inbound"
    }
    const status = STATUSES[weighted(random, STATUS_WEIGHTS)]!
    const lastInbound = messages[messages.length - 1]!.direction === "inbound"
    const unread = lastInbound && status !== "closed" && random.number.float() < 0.7 ? random.number.int({ min: 1, max: 6 }) : 0
    return {
      attributes: {
        status,
        assigned_to: random.number.float() < 0.3 ? null : agents[random.number.int({ max: agents.length - 1 })]!,
        favorite: random.number.float() < 0.08,
        unread_count: unread
      },
      createdAt: messages[0]!.at,
      messages
    }
  }

  return { contact, chat, agents }
}

interface Country {
  readonly code: string
  readonly faker: Faker
  /** Mobile ranges: a start and how many random digits follow. */
  readonly prefixes: ReadonlyArray<{ readonly start: string; readonly digits: number; readonly leadingZero: boolean }>
}

const prefix = (start: string, digits: number, leadingZero = true) => ({ start, digits, leadingZero })

const COUNTRIES: ReadonlyArray<Country> = [
  { code: "US", faker: fakerEN_US, prefixes: ["+1212", "+1415", "+1646", "+1312", "+1617", "+1305", "+1713", "+1206"].map((s) => prefix(s, 7, false)) },
  { code: "GB", faker: fakerEN_GB, prefixes: ["+4474", "+4475", "+4477", "+4478", "+4479"].map((s) => prefix(s, 8)) },
  { code: "DE", faker: fakerDE, prefixes: [prefix("+49151", 8), prefix("+49160", 7), prefix("+49170", 7), prefix("+49176", 8)] },
  { code: "FR", faker: fakerFR, prefixes: [prefix("+336", 8), prefix("+3375", 7), prefix("+3378", 7)] },
  { code: "ES", faker: fakerES, prefixes: [prefix("+346", 8)] },
  { code: "BR", faker: fakerPT_BR, prefixes: [prefix("+55119", 8, false), prefix("+55219", 8, false)] },
  { code: "IN", faker: fakerEN_IN, prefixes: [prefix("+919", 9), prefix("+918", 9)] },
  { code: "MX", faker: fakerES_MX, prefixes: [prefix("+5255", 8), prefix("+5281", 8)] }
]
const COUNTRY_WEIGHTS = [30, 15, 12, 10, 8, 10, 8, 7]

const STATUSES: ReadonlyArray<ChatStatus> = ["open", "pending", "resolved", "closed"]
const STATUS_WEIGHTS = [45, 20, 25, 10]

/** An index drawn with the given relative weights. */
const weighted = (faker: Faker, weights: ReadonlyArray<number>): number => {
  let draw = faker.number.float() * weights.reduce((a, b) => a + b, 0)
  for (let index = 0; index < weights.length; index++) {
    draw -= weights[index]!
    if (draw < 0) return index
  }
  return weights.length - 1
}

/** Each index of `0..size-1` with probability `p`. */
const subset = (faker: Faker, size: number, p: number): Array<number> =>
  Array.from({ length: size }, (_, index) => index).filter(() => faker.number.float() < p)

const INBOUND: ReadonlyArray<(faker: Faker) => string> = [
  (f) => `Hi, where is my order #${f.string.numeric(6)}?`,
  (f) => `Do you still have the ${f.commerce.productName()} in stock?`,
  () => "Thanks, that worked!",
  (f) => `Can I change the delivery address to ${f.location.streetAddress()}?`,
  () => "What are your opening hours?",
  (f) => `I was charged twice for invoice ${f.string.alphanumeric({ length: 8, casing: "upper" })}`,
  (f) => `How much is the ${f.commerce.productName()}?`,
  () => "Hello, is anyone there?",
  (f) => `Could you call me back ${f.helpers.arrayElement(["today", "tomorrow morning", "after 5pm", "on Monday"])}?`,
  (f) => f.lorem.sentence()
]

const OUTBOUND: ReadonlyArray<(faker: Faker) => string> = [
  (f) => `Your order has shipped! Tracking: ${f.string.alphanumeric({ length: 12, casing: "upper" })}`,
  () => "Thanks for reaching out, an agent will reply shortly.",
  (f) => `Yes, the ${f.commerce.productName()} is available for ${f.commerce.price({ symbol: "$" })}.`,
  () => "We're open Monday to Friday, 9:00–18:00.",
  () => "I've refunded the duplicate charge; it will show in 3–5 days.",
  (f) => `Your appointment is confirmed for ${f.date.weekday()} at ${f.number.int({ min: 9, max: 17 })}:00.`,
  () => "Is there anything else I can help you with?",
  (f) => `Use code ${f.string.alpha({ length: 6, casing: "upper" })} for 10% off your next order.`
]

const messageText = (faker: Faker, direction: MessageDirection): string => {
  const templates = direction === "inbound" ? INBOUND : OUTBOUND
  return templates[faker.number.int({ max: templates.length - 1 })]!(faker)
}
