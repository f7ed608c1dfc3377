"""``turnstile dashboard``: a local web page of the queues, with the user's own credentials (their RBAC)."""
