"""``python -m nodemanager``: run a NodeManager daemon."""

import sys

from nodemanager.daemon import main

sys.exit(main())
