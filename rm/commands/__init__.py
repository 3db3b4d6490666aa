"""The ``shepherd`` command's noun-verb groups (``app``, ``node``, ``queue``, ``config``), registered by
:mod:`rm.cli`, with their shared output (``-o table|json|yaml``, ``--watch``) and REST client."""
