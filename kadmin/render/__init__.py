"""Result → text. Data to stdout; warnings, errors and summaries to stderr.

`auto` is a rich table on a terminal and tabulate plain columns on a pipe; `json` is the versioned
envelope; `ndjson` is one JSON object per line (each item of a list result). Both print the data's JSON
form: a typed payload's `to_json()` (kadmin/results.py). The table and the plain text come from the view
the command names (kadmin/render/views.py), which reads the payload's fields. A table is fitted to the terminal's
width by one rule that never cuts or elides a value (kadmin/render/tables.py): cells fold at their separators,
the box goes, and at last each row becomes a block of `KEY: value` lines.

The Renderer, the envelope and the JSON helpers are in kadmin/render/renderer.py, so that a command group can name
its views (kadmin/render/views.py) at the top and load them only when a command runs: `--help` renders none.
"""
