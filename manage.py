#!/usr/bin/env python
"""Django's command-line utility for ctrlscope."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    from django.core.management import execute_from_command_line

    if sys.argv[1:2] in (["migrate"], ["runserver"]):  # ./scripts/run migrates first
        from dashboard.instance import exit_if_damaged

        exit_if_damaged()  # one line and exit code 2, not a traceback

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
