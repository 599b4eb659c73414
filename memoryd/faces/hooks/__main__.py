"""``python -m memoryd.faces.hooks EVENT``: the hook without the CLI's imports."""

import sys

from memoryd.faces.hooks.event import run

run(sys.argv[1:])
