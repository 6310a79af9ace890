"""The completion scripts, the commands reference and the every-command test walk one command tree."""

from __future__ import annotations

from kadmin.cli import docs
from kadmin.cli.app import app
from kadmin.cli.completion import command_tree
from kadmin.cli.help import leaves, option_names, root_command, walk


def test_one_walk_gives_every_consumer_the_same_commands():
    nodes = walk(root_command())
    assert [n.path for n in nodes][0] == ""  # the root first
    assert sorted(command_tree(app)) == sorted(n.path for n in nodes)
    assert docs.command_paths() == [n.path for n in nodes if n.leaf] == [p for p, _ in leaves(root_command())]
    groups = {n.path for n in nodes if n.group}
    assert {"", "brokers", "ids", "sandbox"} <= groups and "brokers list" not in groups


def test_the_walk_sees_what_click_sees():
    """Groups list their visible subcommands by name; a leaf's options are its visible options."""
    root = root_command()
    by_path = {n.path: n for n in walk(root)}
    assert by_path["brokers"].subcommands == tuple(sorted(root.commands["brokers"].commands))
    assert by_path["brokers list"].subcommands == () and by_path["brokers list"].leaf
    names = option_names(by_path["brokers wait"].command)
    assert {"--timeout", "--output", "-o", "--bootstrap-server"} <= set(names)
    assert "--help" not in names  # click adds it; it is no declared option
    tree = command_tree(app)
    assert {o for o, _ in tree["brokers wait"]["options"]} == {*names, "--help"}


def test_hidden_commands_are_left_out():
    import typer

    from kadmin.cli.help import HelpCommand, HelpGroup

    demo = typer.Typer(cls=HelpGroup)
    sub = typer.Typer(name="sub", cls=HelpGroup)
    sub.command("shown", cls=HelpCommand)(lambda: None)
    sub.command("secret", cls=HelpCommand, hidden=True)(lambda: None)
    demo.add_typer(sub)
    demo.command("top", cls=HelpCommand)(lambda: None)
    paths = [n.path for n in walk(typer.main.get_command(demo))]
    assert paths == ["", "sub", "sub shown", "top"]
