"""README sections generated from the code (the exit-code table and the command list).

`python -m kadmin.cli.docs` rewrites them in place; a test fails when README.md is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kadmin.exit_codes import markdown_table


def command_list() -> str:
    from kadmin.cli.app import app
    from kadmin.cli.completion import command_tree

    tree = command_tree(app)
    lines = []
    for path, node in sorted(tree.items()):
        if node["subcommands"] and path:
            continue
        if not path:
            continue
        lines.append(f"- `kadmin {path}`: {_help(path)}")
    return "\n".join(lines)


def _help(path: str) -> str:
    import typer

    from kadmin.cli.app import app

    cmd = typer.main.get_command(app)
    for part in path.split():
        cmd = cmd.commands[part]  # type: ignore[attr-defined]
    return (cmd.help or "").strip().split("\n")[0]


SECTIONS = {"exit-codes": markdown_table, "commands": command_list}


def render(readme: str) -> str:
    for name, fn in SECTIONS.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
        if not pattern.search(readme):
            raise ValueError(f"README.md has no <!-- {name}:start --> ... <!-- {name}:end --> section")
        body = fn()

        def replace(m: re.Match[str], body: str = body) -> str:
            return m.group(1) + body + "\n" + m.group(2)

        readme = pattern.sub(replace, readme)
    return readme


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(render(path.read_text()))


if __name__ == "__main__":
    main()
