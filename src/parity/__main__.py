"""``python -m parity`` runs the command line."""

from parity.cli import entry

entry()
