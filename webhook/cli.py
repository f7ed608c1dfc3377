"""The ``turnstile`` command line (also ``kubectl turnstile``): one subcommand per job, parsed here.

Each subcommand's work lives in its own module; this file only parses arguments and dispatches, importing a
subcommand's module when it runs so that ``turnstile --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _cluster(args: argparse.Namespace) -> int:
    from webhook import localcluster

    if args.action == "up":
        return localcluster.cli_up(Path(args.state_dir))
    if args.action == "down":
        return localcluster.cli_down(Path(args.state_dir))
    return localcluster.cli_status(Path(args.state_dir))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="turnstile", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    cluster = sub.add_parser("cluster", help="a local kube-apiserver + etcd for development and tests")
    cluster.add_argument("action", choices=["up", "down", "status"])
    cluster.add_argument("--state-dir", default=".turnstile", help="where the cluster keeps its data")
    cluster.set_defaults(func=_cluster)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
