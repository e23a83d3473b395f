// Input checks shared by the operations: a bad id or name is a typed InvalidInput, never a SQL error.
import { Perspective } from "@whizbang/core"
import { Effect } from "effect"
import { invalidInput, type OperationError } from "../OperationError.js"

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const uuid = (value: string, option: string): Effect.Effect<string, OperationError> =>
  uuidPattern.test(value)
    ? Effect.succeed(value.toLowerCase())
    : Effect.fail(invalidInput(option, `${option} must be a UUID, got "${value}"`))

export const perspective = (value: string): Effect.Effect<string, OperationError> =>
  Perspective.isValidName(value)
    ? Effect.succeed(value)
    : Effect.fail(invalidInput("perspective", `invalid perspective name "${value}": expected /^[a-z][a-z0-9_]{0,47}$/`))

export const positiveInt = (value: number, option: string): Effect.Effect<number, OperationError> =>
  Number.isInteger(value) && value > 0
    ? Effect.succeed(value)
    : Effect.fail(invalidInput(option, `${option} must be a positive integer, got ${value}`))
