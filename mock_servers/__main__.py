"""``python -m mock_servers``: the same as the ``mcp-fleet`` command."""

import sys

from mock_servers._cli import main

sys.exit(main())
