"""`python -m lecture2_grader`: what `make grade` runs (cli.main reads its command line)."""
import sys

from .cli import main

sys.exit(main())
