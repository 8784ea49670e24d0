"""``python -m parity`` runs the command line."""

import sys

from parity.cli import main

sys.exit(main())
