"""Shell completion scripts generated from the Typer app's command tree.

Generated, so they cannot drift: the checked-in files under completions/ are compared with this output by a
test. Names (commands, options) and the values a static list holds (`-o` choices, `--controllers first|skip`,
the shells of `kadmin completion`) are in the script, so completing them costs no Python start-up; file and
directory options complete file names; `--context` the contexts file's names and broker ids (ID arguments,
`--broker`, `--node`, `quorum check --restart`) the cluster's, both asked of `kadmin __complete`
(kadmin/cli/complete_values.py: bounded by a short timeout, nothing printed on failure, stderr discarded).

The zsh script is a completion function for `$fpath` (`#compdef kadmin` on its first line, file `_kadmin`) that
also works when sourced; fish's is for ~/.config/fish/completions/kadmin.fish.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import typer

from kadmin.cli.help import argument_name, options, value_name, walk

SHELLS = ("bash", "zsh", "fish")

# What an option's or argument's value completes to (value_kind): a word list ("auto table plain"), or one of
FILES, DIRS, CONTEXTS, IDS, ANY = "@file", "@dir", "@contexts", "@ids", "@value"  # ANY: no list (the shell's own)
_CHOICES = re.compile(r"^[a-z0-9.-]+(\|[a-z0-9.-]+)+$")  # a metavar that is a choice list: first|skip, 4.1|3.9
_ID_OPTIONS = {("partitions list", "--broker"), ("roll confirm", "--node"), ("quorum check", "--restart")}


def value_kind(path: str, p: Any, root_words: tuple[str, ...] = ()) -> str | None:
    """What the value of parameter `p` of command `path` completes to; None for a flag."""
    if p.param_type_name == "option":
        shown = value_name(p)
        if not shown:
            return None
        if "--context" in p.opts:
            return CONTEXTS
        if (path, p.opts[0]) in _ID_OPTIONS or shown == "ID":
            return IDS
    else:
        shown = argument_name(p).strip("[]").removesuffix("...")
        if path == "completion":
            return " ".join(SHELLS)
        if path == "help":
            return " ".join(("connection", *root_words))
        if shown == "ID" and not path.startswith("sandbox "):  # the sandbox's ids are its own, not the context's
            return IDS
    if _CHOICES.match(shown):
        return " ".join(shown.split("|"))
    if shown in ("FILE", "META_PROPERTIES") or (shown == "PATH" and p.param_type_name == "argument"):
        return FILES  # an option's PATH is no file's (history ingest --chroot)
    if shown == "DIR":
        return DIRS
    return ANY


def command_tree(app: typer.Typer) -> dict[str, dict[str, Any]]:
    """{"brokers list": {"subcommands": [(name, help)...], "options": [(name, help)...]}, ...} for every
    group and command path ("" is the root), from kadmin/cli/help.py's walk of the tree."""
    tree: dict[str, dict[str, Any]] = {}
    for node in walk(typer.main.get_command(app)):
        subs = node.command.commands if node.group else {}
        opts = [(o, (getattr(p, "help", "") or "").split(".")[0])
                for p in options(node.command) for o in [*p.opts, *getattr(p, "secondary_opts", [])]]
        opts.append(("--help", "Show help"))
        values: dict[str, str] = {}  # "--output" -> its values; "#1", "#2": the arguments'; "#*" the last, many
        roots = tuple(n for n in tree.get("", {}).get("names", ()) if n not in ("completion", "help"))
        args = [p for p in node.command.params if p.param_type_name == "argument" and not p.hidden]
        for p in options(node.command):
            kind = value_kind(node.path, p)
            if kind is not None:
                values.update(dict.fromkeys([*p.opts, *getattr(p, "secondary_opts", [])], kind))
        for i, p in enumerate(args, start=1):
            kind = value_kind(node.path, p, roots) or ANY
            values[f"#{i}"] = kind
            if p.nargs != 1 and node.path != "help":  # help's second word is a command of the first
                values["#*"] = kind
        tree[node.path] = {
            "subcommands": [(n, (subs[n].get_short_help_str(60) or "")) for n in node.subcommands],
            "options": sorted(set(opts)),
            "values": values,
            "names": node.subcommands,
        }
    return tree


def _tables(tree: dict[str, dict[str, Any]], pair: Callable[[str, str], str]) -> tuple[list[str], list[str]]:
    """The completion scripts' two tables, each entry as `pair` writes a key and its value: `kadmin PATH` -> the
    words it completes; `kadmin PATH OPTION` (or `#N`, `#*`: a positional argument) -> what its value completes."""
    entries, values = [], []
    for path, node in sorted(tree.items()):
        words = [n for n, _ in node["subcommands"]] + [o for o, _ in node["options"]]
        key = f"kadmin {path}".strip()
        entries.append(pair(key, " ".join(words)))
        values += [pair(f"{key} {k}", v) for k, v in node["values"].items()]
    return entries, values


def _bash_q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`") + '"'


def _bash_body(tree: dict[str, dict[str, Any]]) -> str:
    entries, values = _tables(tree, lambda k, v: f"        [{_bash_q(k)}]={_bash_q(v)}")
    return (
        "_kadmin_complete() {\n"
        "    local -A tree=(\n" + "\n".join(entries) + "\n    )\n"
        "    local -A vals=(\n" + "\n".join(values) + "\n    )\n"
        '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=kadmin w i n=0 kind=""\n'
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        w=${COMP_WORDS[i]}\n"
        "        if [[ $w == -* ]]; then\n"
        '            if [[ $w != *=* && -n ${vals["$cmd $w"]+x} ]]; then  # its value is the next word\n'
        "                ((i++))\n"
        '                if [[ ${COMP_WORDS[i]} == = ]]; then ((i++)); fi\n'
        "            fi\n"
        '        elif ((n == 0)) && [[ -n ${tree["$cmd $w"]+x} ]]; then cmd="$cmd $w"\n'
        "        else ((n++)); fi\n"
        "    done\n"
        '    if [[ $cur == = && $prev == -* ]]; then kind=${vals["$cmd $prev"]-}; cur=""\n'
        '    elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then kind=${vals["$cmd ${COMP_WORDS[COMP_CWORD-2]}"]-}\n'
        '    elif ((COMP_CWORD >= 2)) && [[ $prev == -* && -n ${vals["$cmd $prev"]+x} ]]; then\n'
        '        kind=${vals["$cmd $prev"]}\n'
        '    elif [[ $cur != -* ]]; then kind=${vals["$cmd #$((n + 1))"]-${vals["$cmd #*"]-}}\n'
        "    fi\n"
        "    COMPREPLY=()\n"
        "    case $kind in\n"
        '        "") mapfile -t COMPREPLY < <(compgen -W "${tree[$cmd]}" -- "$cur") ;;\n'
        f"        {ANY}) ;;\n"
        f'        {FILES}) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;\n'
        f'        {DIRS}) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;\n'
        f"        {CONTEXTS})\n"
        '            mapfile -t COMPREPLY < <(compgen -W \\\n'
        '                "$(command "${COMP_WORDS[0]}" __complete contexts 2>/dev/null)" -- "$cur") ;;\n'
        f"        {IDS})\n"
        '            mapfile -t COMPREPLY < <(compgen -W "$(command "${COMP_WORDS[0]}" __complete ids \\\n'
        '                "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur") ;;\n'
        '        *) mapfile -t COMPREPLY < <(compgen -W "$kind" -- "$cur") ;;\n'
        "    esac\n"
        "}\n"
    )


def _zsh_q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _zsh_body(tree: dict[str, dict[str, Any]]) -> str:
    """A native zsh completion function: the same tables and walk as bash's, with zsh's arrays (1-based `words`,
    `CURRENT`) and completers (compadd, _files)."""
    entries, values = _tables(tree, lambda k, v: f"        {_zsh_q(k)} {_zsh_q(v)}")
    return (
        "_kadmin() {\n"
        "    local -A tree vals\n"
        "    tree=(\n" + "\n".join(entries) + "\n    )\n"
        "    vals=(\n" + "\n".join(values) + "\n    )\n"
        '    local cur=${words[CURRENT]} prev=${words[CURRENT-1]} cmd=kadmin w k i n=0 kind=""\n'
        "    for ((i = 2; i < CURRENT; i++)); do\n"
        "        w=${words[i]}\n"
        '        k="$cmd $w"\n'
        "        if [[ $w == -* ]]; then\n"
        "            if [[ $w != *=* ]] && (( ${+vals[$k]} )); then ((i++)); fi\n"
        "        elif ((n == 0)) && (( ${+tree[$k]} )); then cmd=$k\n"
        "        else ((n++)); fi\n"
        "    done\n"
        '    k="$cmd $prev"\n'
        "    if [[ $cur == --*=* ]]; then\n"
        '        k="$cmd ${cur%%=*}"; compset -P "*="; cur=${cur#*=}\n'
        "        (( ${+vals[$k]} )) && kind=${vals[$k]}\n"
        "    elif ((CURRENT > 2)) && [[ $prev == -* ]] && (( ${+vals[$k]} )); then kind=${vals[$k]}\n"
        '    elif [[ $cur != -* ]]; then\n'
        '        k="$cmd #$((n + 1))"\n'
        "        if (( ${+vals[$k]} )); then kind=${vals[$k]}\n"
        '        else k="$cmd #*"; (( ${+vals[$k]} )) && kind=${vals[$k]}; fi\n'
        "    fi\n"
        "    case $kind in\n"
        "        '') compadd -- ${=tree[$cmd]} ;;\n"
        f"        {ANY}) _default ;;\n"
        f"        {FILES}) _files ;;\n"
        f"        {DIRS}) _files -/ ;;\n"
        f'        {CONTEXTS}) compadd -- ${{(f)"$(command ${{words[1]}} __complete contexts 2>/dev/null)"}} ;;\n'
        f"        {IDS})\n"
        '            compadd -- ${(f)"$(command ${words[1]} __complete ids ${words[2,CURRENT-1]} 2>/dev/null)"} ;;\n'
        "        *) compadd -- ${=kind} ;;\n"
        "    esac\n"
        "}\n"
    )


def script(shell: str, app: typer.Typer) -> str:
    tree = command_tree(app)
    head = "# kadmin shell completion, generated by `kadmin completion " + shell + "`. Do not edit.\n"
    if shell == "bash":
        return head + _bash_body(tree) + "complete -o default -F _kadmin_complete kadmin\n"
    if shell == "zsh":  # #compdef first: compinit reads it from the file `_kadmin` in $fpath
        return ("#compdef kadmin\n" + head + _zsh_body(tree)
                + "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n"  # autoloaded from $fpath
                + '    _kadmin "$@"\n'
                + "else\n"  # sourced
                + "    compdef _kadmin kadmin\n"
                + "fi\n")
    if shell == "fish":
        lines = [head.rstrip(), "complete -c kadmin -f"]
        for path, node in sorted(tree.items()):
            parts = path.split()
            if not parts:
                cond = "__fish_use_subcommand"
            else:
                seen = " ".join(f"; and __fish_seen_subcommand_from {p}" for p in parts)
                cond = seen[len("; and "):]
            for name, desc in node["subcommands"]:
                extra = ""
                if parts:
                    others = " ".join(n for n, _ in node["subcommands"])
                    extra = f"; and not __fish_seen_subcommand_from {others}"
                lines.append(f"complete -c kadmin -n '{cond}{extra}' -a {name} -d {_q(desc)}")
            for opt, desc in node["options"]:
                flag = f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}"
                kind = node["values"].get(opt)
                takes = "" if kind is None else " " + _fish_values(kind)
                lines.append(f"complete -c kadmin -n '{cond}' {flag}{takes} -d {_q(desc)}")
            arg_kinds = {v for k, v in node["values"].items() if k.startswith("#") and v != ANY}
            for kind in sorted(arg_kinds):  # the arguments' values, offered with the command's options
                lines.append(f"complete -c kadmin -n '{cond}' {_fish_values(kind, option=False)}")
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown shell {shell!r}")


def _fish_values(kind: str, option: bool = True) -> str:
    """fish's switches for a value of `kind`: -r (an option's value is required), then -F (file names), or -x
    (none) with -a (the words or the command giving them)."""
    r = "-r " if option else ""
    if kind == FILES:
        return f"{r}-F"
    if kind == ANY:
        return r.strip()
    words = {DIRS: "(__fish_complete_directories)",
             CONTEXTS: "(kadmin __complete contexts 2>/dev/null)",
             IDS: "(kadmin __complete ids (commandline -opc)[2..-1] 2>/dev/null)"}.get(kind, kind)
    return f"{r}-x -a {_q(words)}" if option else f"-a {_q(words)}"


def _q(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
