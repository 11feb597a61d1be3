"""``python -m runner``."""

from runner.cli import main

main()
