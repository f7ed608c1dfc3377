"""``python -m webhook`` runs the ``turnstile`` command line."""

import sys

from webhook.cli import main

sys.exit(main())
