"""The local development cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes
built from Go modules, and Turnstile run in front of them (``turnstile cluster up``, ``make demo``, the tests).

Owns: starting, supervising and stopping those processes, and a small synchronous client for scripts and tests.
Must not: be imported by the production layers (api, core, jobs, admission, controller, kube).
"""
