// Whether a package can be imported from @whizbang/testing (where pnpm links its peers), asked the way it is used: by
// importing it. (`require.resolve` would also look in NODE_PATH, which `pnpm exec` points at every package of the
// workspace, and answer "installed" for a package the import then cannot find.) Only "not found" counts as absent: a
// package that is there but fails to load is installed, and starting its server reports the failure.
export const resolvable = (name: string): Promise<boolean> =>
  import(name).then(
    () => true,
    (cause: unknown) =>
      !((cause as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND" && String((cause as Error).message).includes(`'${name}'`))
  )
