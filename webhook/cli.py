"""The ``turnstile`` command line (also ``kubectl turnstile``): one subcommand per job, parsed here.

Each subcommand's work lives in its own module; this file only parses arguments and dispatches, importing a
subcommand's module when it runs so that ``turnstile --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path


def _cluster(args: argparse.Namespace) -> int:
    from webhook.local import commands as localcluster

    if args.action == "up":
        return localcluster.cli_up(Path(args.state_dir), with_turnstile=args.with_turnstile, nodes=args.nodes)
    if args.action == "down":
        return localcluster.cli_down(Path(args.state_dir))
    return localcluster.cli_status(Path(args.state_dir))


def _serve(args: argparse.Namespace) -> int:
    from webhook import runner

    cert_dir = Path(args.cert_dir) if args.cert_dir else None
    cert = Path(args.tls_cert) if args.tls_cert else (cert_dir / "tls.crt" if cert_dir else None)
    key = Path(args.tls_key) if args.tls_key else (cert_dir / "tls.key" if cert_dir else None)
    return runner.run_from_cli(
        config_file=Path(args.config) if args.config else None,
        cert_file=cert,
        key_file=key,
        kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None,
        host=args.host,
        port=args.port,
        metrics_address=args.metrics_bind_address,
        visibility_address=args.visibility_bind_address,
        reconcile=args.command == "run",
        json_logs=not args.text_logs,
    )


def _certs(args: argparse.Namespace) -> int:
    import base64

    import yaml

    from webhook import tls
    from webhook.admission import conversionconfig, registration

    directory = Path(args.dir)
    hosts = args.host or tls.default_hosts(args.service, args.namespace)
    written = tls.issue_webhook_certificates(directory, hosts, renew_ca=args.renew_ca)
    bundle = base64.b64encode(written.ca_pem).decode("ascii")
    (directory / "ca-bundle.b64").write_text(bundle + "\n")
    if args.manifests:
        target = Path(args.manifests)
        service = registration.ServiceRef(name=args.service, namespace=args.namespace)
        configs = registration.render_webhook_configurations(ca_bundle=written.ca_pem, service=service)
        target.mkdir(parents=True, exist_ok=True)
        (target / "webhooks.yaml").write_text(yaml.safe_dump_all(configs, sort_keys=False))
        # The CRDs' conversion webhook trusts the same CA (a kustomize Component patches them in the overlay).
        crd_patches = conversionconfig.crd_patches(ca_bundle=written.ca_pem, namespace=args.namespace)
        (target / "crd-conversion").mkdir(exist_ok=True)
        (target / "crd-conversion" / "cabundle.yaml").write_text(yaml.safe_dump_all(crd_patches, sort_keys=False))
        (target / "tls.crt").write_bytes(written.cert_file.read_bytes())
        (target / "tls.key").touch(mode=0o600)
        (target / "tls.key").write_bytes(written.key_file.read_bytes())
    print(bundle)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="turnstile", description=__doc__.splitlines()[0])
    # The installed distribution's version (the image's label and the chart's appVersion say the same).
    parser.add_argument("--version", action="version", version=f"%(prog)s {metadata.version('turnstile')}")
    sub = parser.add_subparsers(dest="command", required=True)

    cluster = sub.add_parser("cluster", help="a local kube-apiserver + etcd for development and tests")
    cluster.add_argument("action", choices=["up", "down", "status"])
    cluster.add_argument("--state-dir", default=".turnstile", help="where the cluster keeps its data")
    cluster.add_argument(
        "--with-turnstile",
        action="store_true",
        help="also run `turnstile run` against it and register its webhooks (url clientConfig + caBundle)",
    )
    cluster.add_argument(
        "--nodes",
        default="default",
        metavar="PROFILE",
        help="simulated nodes (kube-scheduler + kwok): a profile name in hack/nodes/, a profile file, or `none` "
        "for the bare control plane (default: default)",
    )
    cluster.set_defaults(func=_cluster)

    for verb, text in (
        ("run", "webhooks + reconciler (the leader of the replicas schedules and writes)"),
        ("serve", "the admission webhooks only, answering from a watch-fed cache"),
    ):
        serve = sub.add_parser(verb, help=text)
        serve.add_argument("--config", help="Turnstile configuration file (YAML, Kueue's Configuration shape)")
        serve.add_argument("--cert-dir", help="directory holding tls.crt and tls.key (default: webhook.certDir)")
        serve.add_argument("--tls-cert", help="serving certificate file (overrides --cert-dir)")
        serve.add_argument("--tls-key", help="serving key file (overrides --cert-dir)")
        serve.add_argument("--host", help="address to listen on (default: webhook.host, all interfaces)")
        serve.add_argument("--port", type=int, help="port to listen on (default: webhook.port, 9443)")
        serve.add_argument("--kubeconfig", help="kubeconfig of the cluster (default: $KUBECONFIG, else in-cluster)")
        serve.add_argument("--metrics-bind-address", help="host:port for /metrics (default: metrics.bindAddress)")
        serve.add_argument("--text-logs", action="store_true", help="human-readable logs instead of JSON lines")
        serve.add_argument(
            "--visibility-bind-address",
            help="host:port for Kueue's visibility API, an aggregated API behind the API server (default: off)",
        )
        serve.set_defaults(func=_serve)

    certs = sub.add_parser("certs", help="write a CA and a webhook serving certificate; print the caBundle")
    certs.add_argument("--dir", default="certs", help="where to write ca.crt, ca.key, tls.crt, tls.key")
    certs.add_argument("--host", action="append", help="DNS name or IP of the certificate (repeatable)")
    certs.add_argument("--service", default="turnstile-webhook-service", help="the webhook Service's name")
    certs.add_argument("--namespace", default="turnstile-system", help="Turnstile's namespace")
    certs.add_argument("--renew-ca", action="store_true", help="replace the CA too (changes the caBundle)")
    certs.add_argument(
        "--manifests",
        help="also write webhooks.yaml (with caBundle) and the pair here, e.g. manifests/webhook/self-managed",
    )
    certs.set_defaults(func=_certs)

    # queues, workloads, why, stop, resume: their parser imports only argparse, their work loads when run.
    from webhook.usercli import parser as usercli_parser

    usercli_parser.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
