/** The value of `--name=value` on the command line, or undefined when it is not given. */
export function option(name: string, argv: readonly string[] = process.argv.slice(2)): string | undefined {
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}
