/**
 * Shell completion scripts (`hermes-janitor completion bash|zsh|fish`), generated from the command tree commander
 * builds out of the option tables: every command and verb (aliases included), every flag, and the values of the
 * enumerated ones (`--log-format text|json`, `--dialect`, `shell-init bash|zsh|fish`), files and directories where
 * a flag takes a path. The scripts are static: a TAB runs no node (a completer that asks the CLI costs a node start
 * per TAB), and they need nothing but the shell (bash's without the bash-completion package).
 *
 * Each script walks the words before the cursor the same way: an option that takes a value skips the next word, a
 * word naming a subcommand of the command so far descends into it; then it offers the value of the option before
 * the cursor, the flags of the command (and the global ones) after a `-`, else its subcommands and argument values.
 */
import type { Argument, Command, Option } from 'commander';
import { COMPLETION_VALUES } from './completion-values.js';
import { fishQuoted } from './advice.js';

/** One option as a shell completes it. */
export interface CompletionOption {
  /** `--wide`, and its one-letter alias if any. */
  names: string[];
  description: string;
  /** It takes a value (the next word, or after `=`). */
  takesValue: boolean;
  /** The values to offer; empty for free text. */
  values: readonly string[];
  /** The value is a path: `file` or `dir` (from its placeholder: `<path>`, `<file>`, `<dir>`). */
  path?: 'file' | 'dir';
}

/** One command (the program itself is the empty path). */
export interface CompletionNode {
  /** `''`, `list`, `stop-hook arm`. */
  path: string;
  description: string;
  /** Subcommands, by each of their names (aliases included), each with the path it leads to. */
  commands: Array<{ name: string; description: string; path: string }>;
  options: CompletionOption[];
  /** The values of its first positional argument (`shell-init <shell>`), if enumerated. */
  argValues: readonly string[];
}

const firstSentence = (s: string) => {
  const cut = s
    .replace(/\s+/g, ' ')
    .split(/(?<=[;:])\s|\s\(/)[0]!
    .replace(/[;:,]$/, '');
  return cut.length > 60 ? `${cut.slice(0, 59)}…` : cut;
};

function optionOf(o: Option): CompletionOption {
  const placeholder = /<([^>]+)>/.exec(o.flags)?.[1] ?? '';
  const path = /path|file/.test(placeholder) ? 'file' : placeholder === 'dir' ? 'dir' : undefined;
  const own = (o as unknown as Record<symbol, readonly string[] | undefined>)[COMPLETION_VALUES];
  return {
    names: [o.long, o.short].filter((n): n is string => Boolean(n)),
    description: firstSentence(o.description ?? ''),
    takesValue: Boolean(o.required || o.optional),
    values: o.argChoices ?? own ?? [],
    ...(path ? { path } : {}),
  };
}

/** The tree under `cmd`, one node per command, the program's first. */
export function completionTree(cmd: Command, prefix = ''): CompletionNode[] {
  const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  const arg = (cmd as unknown as { registeredArguments: readonly Argument[] }).registeredArguments[0];
  const node: CompletionNode = {
    path: prefix,
    description: firstSentence(cmd.description()),
    commands: subs.flatMap((c) =>
      [c.name(), ...c.aliases()].map((name) => ({ name, description: firstSentence(c.description()), path: prefix ? `${prefix} ${c.name()}` : c.name() })),
    ),
    options: [...cmd.options.filter((o) => !o.hidden).map(optionOf), { names: ['--help', '-h'], description: 'display help', takesValue: false, values: [] }],
    argValues: arg?.argChoices ?? [],
  };
  return [node, ...subs.flatMap((c) => completionTree(c, prefix ? `${prefix} ${c.name()}` : c.name()))];
}

/** Single-quoted for bash and zsh (`'\''` for a quote), or for fish (`advice.ts` `fishQuoted`: fish reads `\'` inside single quotes). */
const sq = (s: string, shell: 'posix' | 'fish' = 'posix') => (shell === 'fish' ? fishQuoted(s) : `'${s.replace(/'/g, `'\\''`)}'`);

/** The options taking a value, by command path: the words the walk skips. */
function valueOptions(tree: CompletionNode[], global: CompletionOption[]): string {
  const names = (n: CompletionNode) => [...n.options, ...(n.path ? global : [])].filter((o) => o.takesValue).flatMap((o) => o.names);
  return tree.map((n) => `    ${sq(n.path)}) vals=${sq(names(n).join(' '))} ;;`).join('\n');
}

/** Where each name leads from each path (an alias to its command's path), as `[from|name, to]`. */
const descents = (tree: CompletionNode[]) => tree.flatMap((n) => n.commands.map((c) => [`${n.path}|${c.name}`, c.path] as const));

/** `case` arms of the walk's descent: `'list|ls') cmdpath='list' ;;`. */
function canonicalArms(tree: CompletionNode[]): string {
  return descents(tree)
    .map(([from, to]) => `    ${sq(from)}) cmdpath=${sq(to)} ;;`)
    .join('\n');
}

/** The words offered after an option that takes a value: its values, or a file or directory completion. */
function valueArms(tree: CompletionNode[], global: CompletionOption[], emit: (o: CompletionOption) => string): string {
  const arms = new Map<string, string>();
  for (const n of tree) {
    for (const o of [...n.options, ...global]) {
      if (!o.takesValue || (!o.values.length && !o.path)) continue;
      for (const name of o.names) arms.set(`${n.path}|${name}`, `    ${sq(`${n.path}|${name}`)}) ${emit(o)} ;;`);
    }
  }
  return [...arms.values()].join('\n');
}

/** bash (3.2 and later; no bash-completion package needed). */
export function bashScript(program: Command): string {
  const tree = completionTree(program);
  const global = tree[0]!.options.filter((o) => o.names[0] !== '--help');
  const flags = (n: CompletionNode) => [...new Set([...n.options, ...(n.path ? global : [])].flatMap((o) => o.names))].join(' ');
  return `# bash completion for hermes-janitor, generated by 'hermes-janitor completion bash'.
# Install: hermes-janitor completion bash > ~/.local/share/bash-completion/completions/hermes-janitor
#      or: echo 'source <(hermes-janitor completion bash)' >> ~/.bashrc
_hermes_janitor() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev= cmdpath= vals= w i skip=
  (( COMP_CWORD > 0 )) && prev=\${COMP_WORDS[COMP_CWORD-1]}
  for (( i = 1; i < COMP_CWORD; i++ )); do
    w=\${COMP_WORDS[i]}
    if [[ -n $skip ]]; then skip=; continue; fi
    case $cmdpath in
${valueOptions(tree, global)}
    esac
    if [[ $w == -* ]]; then
      [[ $w != *=* && " $vals " == *" $w "* ]] && skip=1
      continue
    fi
    case "$cmdpath|$w" in
${canonicalArms(tree)}
    esac
  done
  COMPREPLY=()
  if [[ -n $skip ]]; then
    case "$cmdpath|$prev" in
${valueArms(tree, global, (o) =>
  o.values.length
    ? `COMPREPLY=( $(compgen -W ${sq(o.values.join(' '))} -- "$cur") )`
    : `COMPREPLY=( $(compgen ` + `-${o.path === 'dir' ? 'd' : 'f'} -- "$cur") )`,
)}
    esac
    return 0
  fi
  if [[ $cur == -* ]]; then
    case $cmdpath in
${tree.map((n) => `    ${sq(n.path)}) COMPREPLY=( $(compgen -W ${sq(flags(n))} -- "$cur") ) ;;`).join('\n')}
    esac
    return 0
  fi
  case $cmdpath in
${tree
  .filter((n) => n.commands.length || n.argValues.length)
  .map((n) => `    ${sq(n.path)}) COMPREPLY=( $(compgen -W ${sq([...n.commands.map((c) => c.name), ...n.argValues].join(' '))} -- "$cur") ) ;;`)
  .join('\n')}
  esac
  return 0
}
complete -F _hermes_janitor hermes-janitor
`;
}

/** zsh (its own completion system: `compinit`), with descriptions. */
export function zshScript(program: Command): string {
  const tree = completionTree(program);
  const global = tree[0]!.options.filter((o) => o.names[0] !== '--help');
  const described = (items: Array<{ name: string; description: string }>) => items.map((i) => sq(`${i.name.replace(/:/g, '\\:')}:${i.description}`)).join(' ');
  const flagItems = (n: CompletionNode) =>
    [...n.options, ...(n.path ? global : [])].flatMap((o) => o.names.map((name) => ({ name, description: o.description })));
  return `#compdef hermes-janitor
# zsh completion for hermes-janitor, generated by 'hermes-janitor completion zsh'.
# Install: hermes-janitor completion zsh > "\${fpath[1]}/_hermes-janitor"   (then start a new shell)
#      or: echo 'source <(hermes-janitor completion zsh)' >> ~/.zshrc    (after compinit)
_hermes_janitor() {
  local cur=\${words[CURRENT]} prev=\${words[CURRENT-1]} cmdpath= vals= w i skip=
  local -a items
  for (( i = 2; i < CURRENT; i++ )); do
    w=\${words[i]}
    if [[ -n $skip ]]; then skip=; continue; fi
    case $cmdpath in
${valueOptions(tree, global)}
    esac
    if [[ $w == -* ]]; then
      [[ $w != *=* && " $vals " == *" $w "* ]] && skip=1
      continue
    fi
    case "$cmdpath|$w" in
${canonicalArms(tree)}
    esac
  done
  if [[ -n $skip ]]; then
    case "$cmdpath|$prev" in
${valueArms(tree, global, (o) => (o.values.length ? `compadd -- ${o.values.map((v) => sq(v)).join(' ')}` : o.path === 'dir' ? '_directories' : '_files'))}
    esac
    return
  fi
  if [[ $cur == -* ]]; then
    case $cmdpath in
${tree.map((n) => `    ${sq(n.path)}) items=( ${described(flagItems(n))} ) ;;`).join('\n')}
    esac
    _describe -t options option items
    return
  fi
  case $cmdpath in
${tree
  .filter((n) => n.commands.length || n.argValues.length)
  .map((n) => `    ${sq(n.path)}) items=( ${described([...n.commands, ...n.argValues.map((v) => ({ name: v, description: '' }))])} ) ;;`)
  .join('\n')}
    *) return ;;
  esac
  _describe -t commands command items
}
if (( $+functions[compdef] )); then compdef _hermes_janitor hermes-janitor; fi
`;
}

/** fish, with descriptions. */
export function fishScript(program: Command): string {
  const tree = completionTree(program);
  const global = tree[0]!.options.filter((o) => o.names[0] !== '--help');
  const lines: string[] = [];
  for (const n of tree) {
    const when = `-n ${sq(`test (__hermes_janitor_path) = ${sq(n.path, 'fish')}`, 'fish')}`;
    for (const c of n.commands) lines.push(`complete -c hermes-janitor -f ${when} -a ${sq(c.name, 'fish')} -d ${sq(c.description, 'fish')}`);
    for (const v of n.argValues) lines.push(`complete -c hermes-janitor -f ${when} -a ${sq(v, 'fish')}`);
    for (const o of [...n.options, ...(n.path ? global : [])]) {
      const names = o.names.map((name) => (name.startsWith('--') ? `-l ${name.slice(2)}` : `-s ${name.slice(1)}`)).join(' ');
      const value = !o.takesValue ? '' : o.values.length ? ` -x -a ${sq(o.values.join(' '), 'fish')}` : o.path ? ' -r -F' : ' -x';
      lines.push(`complete -c hermes-janitor${o.path ? '' : ' -f'} ${when} ${names}${value} -d ${sq(o.description, 'fish')}`);
    }
  }
  const takes = (n: CompletionNode) => [...n.options, ...(n.path ? global : [])].filter((o) => o.takesValue).flatMap((o) => o.names);
  return `# fish completion for hermes-janitor, generated by 'hermes-janitor completion fish'.
# Install: hermes-janitor completion fish > ~/.config/fish/completions/hermes-janitor.fish
function __hermes_janitor_path --description 'the hermes-janitor command the words before the cursor name'
    set -l words (commandline -opc)
    set -e words[1]
    set -l cmdpath ''
    set -l vals
    set -l skip 0
    for w in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $cmdpath
${tree
  .map(
    (n) =>
      `            case ${sq(n.path, 'fish')}\n                set vals ${takes(n)
        .map((v) => sq(v, 'fish'))
        .join(' ')}`,
  )
  .join('\n')}
        end
        if string match -q -- '-*' $w
            if not string match -q -- '*=*' $w; and contains -- $w $vals
                set skip 1
            end
            continue
        end
        switch "$cmdpath|$w"
${descents(tree)
  .map(([from, to]) => `            case ${sq(from, 'fish')}\n                set cmdpath ${sq(to, 'fish')}`)
  .join('\n')}
        end
    end
    echo $cmdpath
end
${lines.join('\n')}
`;
}
