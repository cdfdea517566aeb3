"""``python -m mock_servers``: the same as the ``mcp-fleet`` command."""

import os
import sys

# A stdio server whose environment names a fork server is forked there (a second of imports
# saved); the check comes first so that the launcher itself imports next to nothing.
if sys.argv[1:2] == ["stdio"] and (forkserver := os.environ.get("MOCK_SERVERS_FORKSERVER")):
    from mock_servers._forkserver import launch

    launch(forkserver)

from mock_servers._cli import main

sys.exit(main())
