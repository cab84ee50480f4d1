"""``python -m nrtsim``: where the installed simulator is.

``sdk-root`` prints the SDK folder (for ``cmake -DNEURON_ROOT=…`` and ``LD_LIBRARY_PATH``),
``tool`` the ``nrtsim`` executable, ``version`` the package version.
"""

from __future__ import annotations

import argparse
import sys

from . import __version__, sdk_root, tool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nrtsim",
        description="Where the installed Neuron runtime simulator is. The simulator itself is "
        "the nrtsim command (nrtsim --help).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "sdk-root",
        help="print the SDK folder: lib/libnrt.so.1, lib/libnrt.so, lib/pkgconfig/nrt.pc, "
        "include/nrt/*.h (cmake -DNEURON_ROOT=..., LD_LIBRARY_PATH=.../lib)",
    )
    commands.add_parser("tool", help="print the path of the nrtsim executable")
    commands.add_parser("version", help="print the package version")
    args = parser.parse_args(argv)
    if args.command == "sdk-root":
        print(sdk_root())
    elif args.command == "tool":
        try:
            print(tool())
        except FileNotFoundError as error:
            print(f"python -m nrtsim tool: {error}", file=sys.stderr)
            return 1
    else:
        print(__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
