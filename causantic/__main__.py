"""`python -m causantic`: the same entry point as the `causantic` console script."""

import sys

from causantic.cli import main

sys.exit(main())
