"""Load generators that drive a real ResourceManager over its gRPC protocols: simulated NodeManagers
(``nm_sim``) and simulated ApplicationMasters (``am_sim``), in one asyncio process. ``bench/scale_service.py``
starts an RM and runs them; ``stats`` holds what both record."""
