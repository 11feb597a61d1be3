"""``python -m runner``."""

from .cli import main

main()
