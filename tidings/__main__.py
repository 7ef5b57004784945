import sys

from tidings.cli import main

sys.exit(main())
