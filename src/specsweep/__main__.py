import sys

from specsweep.cli import main

sys.exit(main())
