"""One adapter per integration (batch Job, Pod group, bare Workload).

Owns: job -> Workload construction, injecting and restoring flavor node selectors and tolerations,
suspend/release as pure object transformations.
Must not: know HTTP or talk to the API server.
"""
