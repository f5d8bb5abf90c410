"""`python3 capture/` (this folder, copied into a container) or `python -m benchbook.environment.capture`:
print the record as JSON."""

import sys

try:
    from .record import main
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from record import main

if __name__ == "__main__":
    sys.exit(main())
