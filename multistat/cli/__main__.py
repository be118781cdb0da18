"""``python -m multistat.cli``: the console entry point."""

from multistat.cli import main

main()
