#!/usr/bin/env python3
"""Writes attn's bash and zsh completions from the built binary's own --help (scripts/cli_help.py
reads it): the subcommands, each one's options, the values an option's help lists ({text,json}, or
a list of names), nothing after a number's option, and files for file arguments and other values.
Not the shells' loading of them (install() puts them where bash-completion and zsh look).

Usage: completions.py ATTN BASH_OUT ZSH_OUT   (the build runs it: CMakeLists.txt)
"""
import re
import sys

import cli_help

BASH_HEAD = """\
# bash completion for attn: its subcommands, their options, and the values their help lists.
# Written from "attn --help" by scripts/completions.py when attn is built; do not edit.
_attn_words() { COMPREPLY=($(compgen -W "$1" -- "$cur")); }
_attn_files() {
  compopt -o filenames 2>/dev/null
  local IFS=$'\\n'
  COMPREPLY=($(compgen -f -- "$cur"))
}
_attn() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub= opts i
  # --format=js: bash splits the word at '='
  if [[ $cur == = ]]; then cur=
  elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}
  fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ ${COMP_WORDS[i]} != -* ]] && { sub=${COMP_WORDS[i]}; break; }
  done
  case $sub in
"""

BASH_TAIL = """\
    *) return ;;
  esac
  if [[ $cur == -* ]]; then _attn_words "$opts"; else _attn_files; fi
}
complete -F _attn attn
"""


def option_words(entries):
    return " ".join(n for e in entries if e.is_option for n in e.names)


def bash_value_arms(entries):
    """case $prev arms: listed values, nothing for a number, files for any other value."""
    arms, paths, others = [], [], []
    for e in entries:
        if not e.is_option or not e.spec:
            continue
        pattern = "|".join(e.names)
        if e.choices:
            arms.append(f"        {pattern}) _attn_words '{' '.join(e.choices)}'; return ;;")
        else:
            (paths if e.takes_path else others).append(pattern)
    if paths:
        arms.append(f"        {'|'.join(paths)}) _attn_files; return ;;")
    if others:
        arms.append(f"        {'|'.join(others)}) return ;;  # a number or other text: nothing to offer")
    return arms


def bash(cli):
    top_options = [e for t, es in cli.top.sections if t != "Subcommands" for e in es]
    out = [BASH_HEAD.rstrip("\n"),
           f"    '') _attn_words \"{' '.join(cli.subcommands)}$([[ $cur == -* ]] && echo ' {option_words(top_options)}')\"; return ;;"]
    for name, sub in cli.subcommands.items():
        entries = [e for _, es in sub.sections for e in es]
        out += [f"    {name})", f"      opts='{option_words(entries)}'"]
        arms = bash_value_arms(entries)
        if arms:
            out += ["      case $prev in"] + arms + ["      esac"]
        out.append("      ;;")
    return "\n".join(out) + "\n" + BASH_TAIL


def short(description):
    """The first clause of a description, for zsh's one-line listings."""
    cut = next((m.start() for m in re.finditer(r"; | \(|: |\. ", description) if m.start() >= 15), len(description))
    text = description[:cut]
    return text if len(text) <= 70 else text[:67].rsplit(" ", 1)[0] + "..."


def zsh_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def zsh_spec(e, position):
    """One _arguments spec: an option (with its value's completion) or the position'th argument."""
    brief = short(e.description).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    if e.is_option:
        action = ":" + (f"({' '.join(e.choices)})" if e.choices else "_files" if e.takes_path else " ")
        value = f"=[{brief}]:{e.placeholder.lower()}{action}" if e.spec else f"[{brief}]"
        if len(e.names) > 1:
            return f"'({' '.join(e.names)})'{{{','.join(e.names)}}}{zsh_quote(value)}"
        return zsh_quote(e.names[0] + value)
    optional = "" if "REQUIRED" in e.spec else ":"
    return zsh_quote(f"{position}:{optional}{e.names[0]}:_files")


def zsh(cli):
    out = ["#compdef attn",
           "# zsh completion for attn: its subcommands, their options, and the values their help lists.",
           '# Written from "attn --help" by scripts/completions.py when attn is built; do not edit.', ""]
    for name, sub in cli.subcommands.items():
        specs, position = [], 0
        for _, entries in sub.sections:
            for e in entries:
                position += not e.is_option
                specs.append(zsh_spec(e, position))
        out += [f"_attn_{name.replace('-', '_')}() {{", "  _arguments -s -S \\"] + [f"    {s} \\" for s in specs[:-1]] + [f"    {specs[-1]}", "}", ""]
    top = [zsh_spec(e, 0) for t, es in cli.top.sections if t != "Subcommands" for e in es]
    subs = " ".join(zsh_quote(f"{n}:{short(s.description)}") for n, s in cli.subcommands.items())
    arms = [f"        {n}) _attn_{n.replace('-', '_')} ;;" for n in cli.subcommands]
    out += ["_attn() {", "  local curcontext=$curcontext state state_descr line ret=1", "  typeset -A opt_args",
            "  _arguments -C \\"] + [f"    {s} \\" for s in top] + [
            "    '1:subcommand:->subcommand' \\", "    '*::argument:->argument' && ret=0",
            "  case $state in",
            f"    subcommand) local -a subcommands=({subs})",
            "      _describe -t subcommands 'attn subcommand' subcommands && ret=0 ;;",
            "    argument) curcontext=${curcontext%:*:*}:attn-$words[1]:",
            "      case $words[1] in"] + arms + ["      esac ;;", "  esac", "  return ret", "}", "", '_attn "$@"']
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: completions.py ATTN BASH_OUT ZSH_OUT")
    cli = cli_help.read_cli(sys.argv[1])
    for path, text in ((sys.argv[2], bash(cli)), (sys.argv[3], zsh(cli))):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
