"""``python -m tracker`` is the same as ``gpu-tracker``."""

from tracker.cli import main

main()
