"""``python -m inbox_core``: the ``inbox-core`` command line (see ``inbox_core.cli``)."""

import sys

from inbox_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
