import type { Command, Option } from "commander";
import type { Io } from "./io.js";

/**
 * `driftless completion bash|zsh|fish`: a completion script written from the commander program
 * itself (its commands, their flags and the flags' choices), so it never falls behind the CLI.
 */

export type Shell = "bash" | "zsh" | "fish";

/** One flag as the scripts need it. */
type Flag = {
  names: string[];
  long?: string;
  short?: string;
  takesValue: boolean;
  choices: string[];
  help: string;
};

/** One command: its name, its flags, and the values its positional argument accepts, if listed. */
type Entry = { name: string; help: string; flags: Flag[]; argumentChoices: string[] };

/** Prints the script for `shell` and returns 0. */
export async function completionCommand(program: Command, shell: Shell, io: Io): Promise<number> {
  io.out(SCRIPTS[shell](program.name(), [...flagsOf(program), HELP], entriesOf(program)));
  return 0;
}

const SCRIPTS: { [S in Shell]: (name: string, globals: Flag[], commands: Entry[]) => string } = {
  bash: bashScript,
  zsh: zshScript,
  fish: fishScript,
};

function entriesOf(program: Command): Entry[] {
  return program.commands.map((command) => ({
    name: command.name(),
    help: command.description(),
    flags: [...flagsOf(command), HELP],
    argumentChoices: command.registeredArguments.flatMap((argument) => argument.argChoices ?? []),
  }));
}

const HELP: Flag = {
  names: ["-h", "--help"],
  long: "--help",
  short: "-h",
  takesValue: false,
  choices: [],
  help: "display help",
};

function flagsOf(command: Command): Flag[] {
  return command.options.map((option: Option) => ({
    names: [option.short, option.long].filter((name): name is string => Boolean(name)),
    ...(option.long ? { long: option.long } : {}),
    ...(option.short ? { short: option.short } : {}),
    takesValue: option.required,
    choices: option.argChoices ?? [],
    // Only the first sentence: the defaults and variables are for --help.
    help: option.description.replace(/\s*\(.*$/, ""),
  }));
}

const functionName = (name: string) => `_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;

function bashScript(name: string, globals: Flag[], commands: Entry[]): string {
  const fn = functionName(name);
  const valueFlags = (flags: Flag[]) =>
    flags.filter((f) => f.takesValue && f.choices.length === 0).flatMap((f) => f.names);
  const choiceCases = (flags: Flag[]) =>
    flags
      .filter((f) => f.choices.length > 0)
      .map(
        (f) =>
          `        ${f.names.join("|")}) COMPREPLY=($(compgen -W "${f.choices.join(" ")}" -- "$cur")); return ;;`,
      );
  const commandCase = (entry: Entry) => {
    const words = entry.flags.flatMap((f) => f.names).join(" ");
    const values = valueFlags(entry.flags);
    return [
      `    ${entry.name})`,
      '      case "$prev" in',
      ...choiceCases(entry.flags),
      // A flag's value other than a choice: bash's own completion (files) through -o default.
      ...(values.length > 0 ? [`        ${values.join("|")}) return ;;`] : []),
      "      esac",
      `      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "${words}" -- "$cur"))`,
      ...(entry.argumentChoices.length > 0
        ? [`      else COMPREPLY=($(compgen -W "${entry.argumentChoices.join(" ")}" -- "$cur"))`]
        : []),
      "      fi",
      "      ;;",
    ].join("\n");
  };
  // Skipped when looking for the command: a global flag and its value (`--log-level debug`).
  const globalsWithValue = globals.filter((f) => f.takesValue).flatMap((f) => f.names);
  return `# ${name} completion for bash; load it with: source <(${name} completion bash)
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local command="" i=1
  # The command is the first word that is neither a flag nor a flag's value.
  while [[ $i -lt $COMP_CWORD ]]; do
    case "\${COMP_WORDS[i]}" in
      ${globalsWithValue.join("|") || "--"}) i=$((i + 1)) ;;
      -*) ;;
      *) command="\${COMP_WORDS[i]}"; break ;;
    esac
    i=$((i + 1))
  done
  COMPREPLY=()
  case "$command" in
    "")
      case "$prev" in
${choiceCases(globals)
  .map((line) => `  ${line}`)
  .join("\n")}
      esac
      if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "${globals.flatMap((f) => f.names).join(" ")}" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "${commands.map((c) => c.name).join(" ")}" -- "$cur"))
      fi
      ;;
${commands.map(commandCase).join("\n")}
  esac
}
complete -o default -F ${fn} ${name}
`;
}

/** zsh: text inside `'…'`, with `[`, `]` (or also `:`, in a name) escaped where _arguments reads them. */
const zshText = (text: string, special = /([[\]])/g) => text.replace(/'/g, "'\\''").replace(special, "\\$1");
const zshName = (text: string) => zshText(text, /([[\]:])/g);

function zshFlag(flag: Flag): string {
  const names =
    flag.names.length > 1 ? `'(${flag.names.join(" ")})'{${flag.names.join(",")}}` : `'${flag.names[0]}`;
  const open = flag.names.length > 1 ? "'" : "";
  const value = flag.takesValue
    ? `:${zshName(flag.long?.slice(2) ?? "value")}:${flag.choices.length > 0 ? `(${flag.choices.join(" ")})` : "_files"}`
    : "";
  return `${names}${open}[${zshText(flag.help)}]${value}'`;
}

function zshScript(name: string, globals: Flag[], commands: Entry[]): string {
  const fn = functionName(name);
  const commandCase = (entry: Entry) => {
    const specs = [
      ...entry.flags.map(zshFlag),
      entry.argumentChoices.length > 0 ? `'1:value:(${entry.argumentChoices.join(" ")})'` : "'*:file:_files'",
    ];
    return `        ${entry.name})\n          _arguments -s \\\n            ${specs.join(" \\\n            ")}\n          ;;`;
  };
  return `#compdef ${name}
# ${name} completion for zsh; load it with: source <(${name} completion zsh)
${fn}() {
  local state line
  _arguments -C \\
    ${[...globals.map(zshFlag), "'1: :->command'", "'*:: :->argument'"].join(" \\\n    ")}
  case $state in
    command)
      local -a commands
      commands=(
${commands.map((c) => `        '${zshName(c.name)}:${zshText(c.help)}'`).join("\n")}
      )
      _describe 'command' commands
      ;;
    argument)
      case $line[1] in
${commands.map(commandCase).join("\n")}
      esac
      ;;
  esac
}
if [ "$funcstack[1]" = "${fn}" ]; then
  ${fn} "$@"
else
  compdef ${fn} ${name}
fi
`;
}

/** fish: `'…'` quoting. */
const fishText = (text: string) => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

function fishFlag(name: string, condition: string, flag: Flag): string {
  const parts = [`complete -c ${name} -n ${fishText(condition)}`];
  if (flag.long) parts.push(`-l ${flag.long.slice(2)}`);
  if (flag.short) parts.push(`-s ${flag.short.slice(1)}`);
  if (flag.takesValue)
    parts.push(flag.choices.length > 0 ? `-x -a ${fishText(flag.choices.join(" "))}` : "-r");
  parts.push(`-d ${fishText(flag.help)}`);
  return parts.join(" ");
}

function fishScript(name: string, globals: Flag[], commands: Entry[]): string {
  const names = commands.map((c) => c.name).join(" ");
  const lines = [
    `# ${name} completion for fish; load it with: ${name} completion fish | source`,
    `complete -c ${name} -f`,
    ...globals.map((flag) => fishFlag(name, `not __fish_seen_subcommand_from ${names}`, flag)),
    ...commands.map(
      (c) =>
        `complete -c ${name} -n ${fishText(`not __fish_seen_subcommand_from ${names}`)} -a ${c.name} -d ${fishText(c.help)}`,
    ),
    ...commands.flatMap((c) => {
      const condition = `__fish_seen_subcommand_from ${c.name}`;
      return [
        ...c.flags.map((flag) => fishFlag(name, condition, flag)),
        c.argumentChoices.length > 0
          ? `complete -c ${name} -n ${fishText(condition)} -a ${fishText(c.argumentChoices.join(" "))}`
          : `complete -c ${name} -n ${fishText(condition)} -F`,
      ];
    }),
  ];
  return `${lines.join("\n")}\n`;
}
