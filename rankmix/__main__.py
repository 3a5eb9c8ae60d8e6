# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Entry point of ``python -m rankmix``; see :mod:`rankmix._cli`."""

import sys

from rankmix._cli import main

if __name__ == "__main__":
    sys.exit(main())
