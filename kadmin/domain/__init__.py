"""Pure domain logic: stdlib only, no I/O, no clock reads (an import-linter contract keeps it so)."""
