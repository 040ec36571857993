import { InvalidArgumentError } from "commander"

/** The CLI's option parsers: each returns the value or throws commander's usage error naming the option. */

/** An integer from `min` to `max`, written in digits. */
export const integer = (name: string, min: number, max: number) => (text: string) => {
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < min || value > max) throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`)
  return value
}

/** An `http(s)` URL. */
export const httpUrl = (name: string) => (text: string) => {
  if (!/^https?:\/\/[^\s/]+/.test(text)) throw new InvalidArgumentError(`${name} must be an http(s) URL`)
  return text
}

/** A finite number (a coordinate). */
export const coordinate = (name: string) => (text: string) => {
  const value = Number(text)
  if (text.trim() === "" || !Number.isFinite(value)) throw new InvalidArgumentError(`${name} must be a number`)
  return value
}

/** A phone number: 5 to 15 digits, optionally with `+`, spaces, dashes, dots and parentheses. */
export const phone = (name: string) => (text: string) => {
  const digits = text.replace(/\D/g, "")
  if (!/^\+?[\d\s().-]+$/.test(text) || digits.length < 5 || digits.length > 15) {
    throw new InvalidArgumentError(`${name} must be a phone number (5 to 15 digits, e.g. +16505551234)`)
  }
  return text
}
