"""The arguments of the user and admin subcommands, registered on ``turnstile``'s parser.

Owns: ``register(subparsers)`` for ``queues``, ``workloads``, ``why``, ``fit``, ``dashboard``, ``stop``, ``resume`` and
``migrate-storage``.
Must not: import anything heavy: ``turnstile --help`` builds this parser, the work is imported when a command runs.
"""

from __future__ import annotations

import argparse
from typing import Any


def _run(args: argparse.Namespace) -> int:
    from webhook.usercli import commands

    return commands.main(args)


def _dashboard(args: argparse.Namespace) -> int:
    from webhook.dashboard.app import main
    from webhook.usercli.commands import default_namespace, kubeconfig_path

    kubeconfig = kubeconfig_path(args.kubeconfig)
    namespace = args.namespace or default_namespace(kubeconfig, args.context)
    return main(kubeconfig=kubeconfig, context=args.context, namespace=namespace, host=args.host, port=args.port)


def _common(parser: argparse.ArgumentParser, *, output: bool = True, all_namespaces: bool = False) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("-n", "--namespace", help="namespace (default: the context's)")
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    if output:
        parser.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table")
    parser.set_defaults(func=_run)


def register(sub: Any) -> None:
    """Add the subcommands to ``sub`` (what ``ArgumentParser.add_subparsers()`` returned)."""
    p = sub.add_parser("queues", help="ClusterQueues and LocalQueues (of every namespace, or -n's) against quota")
    _common(p)

    p = sub.add_parser("workloads", help="workloads, pending ones with their position in the queue")
    _common(p, all_namespaces=True)
    p.add_argument("--pending", action="store_true", help="only pending workloads")

    p = sub.add_parser("why", help="why a job is pending (or what it is doing)")
    _common(p)
    p.add_argument("target", help="a Job name, job/NAME or workload/NAME")

    p = sub.add_parser("fit", help="would this job be admitted now, on which flavors, and if not why and behind whom")
    _common(p)
    p.add_argument("-f", "--filename", required=True, help="a batch/v1 Job or Workload manifest ('-' for stdin)")

    p = sub.add_parser("dashboard", help="a local web page of the queues, live, with your kubeconfig's identity")
    _common(p, output=False)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765; 0 picks a free one)")
    p.set_defaults(func=_dashboard)

    for name, text in (("stop", "stop admitting to a queue"), ("resume", "resume a stopped queue")):
        p = sub.add_parser(name, help=text)
        _common(p, output=False)
        p.add_argument("name", help="ClusterQueue name (LocalQueue name with --local-queue)")
        p.add_argument("--local-queue", action="store_true", help="NAME is a LocalQueue in -n NAMESPACE")
        p.add_argument("--dry-run", action="store_true", help="validate on the server, change nothing")
        if name == "stop":
            p.add_argument("--drain", action="store_true", help="also evict admitted workloads (HoldAndDrain)")

    p = sub.add_parser(
        "migrate-storage",
        help="after an upgrade: rewrite every stored queue object as v1beta2 and set the CRDs' storedVersions",
    )
    _common(p, output=False)
