import sys

from sleuth.cli import main

sys.exit(main())
