"""`python -m benchbook`: the CLI, for environments where the console script is not on the PATH."""

import sys

from .cli import main

sys.exit(main())
