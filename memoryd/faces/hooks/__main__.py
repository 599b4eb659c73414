"""``python -m memoryd.faces.hooks EVENT``: the hook without the CLI's imports."""

import sys

from memoryd.faces.hooks.event import main

sys.exit(main(sys.argv[1:]))
