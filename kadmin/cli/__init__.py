"""The Typer command line: one module per noun. Exit codes are mapped here and only here."""
