"""Reservation plans (Morpheus): YARN's reservation system with LowCost packing, inferred SLOs and DRA.

Pure like the rest of ``rm.core``: time arrives as arguments, nothing reads a clock or touches the disk,
except that ``skyline.solve_skyline`` hands its LP to PuLP's bundled CBC solver (run it off the
scheduling loop). See ``docs/reservations.md`` for the whole picture.

* ``requests``  — ReservationDefinition / ReservationRequest, interpreters, recurrence, validation
* ``timeline``  — the capacity timeline per resource in fixed steps, with the repeating (LCM) window
* ``placement`` — the problem an agent solves and its answer; ``ReservationAgent`` protocol
* ``lowcost``   — Morpheus' LowCost agent;  ``greedy`` — YARN's latest-first greedy agent
* ``book``      — one queue's plan: bookings, the per-step index of active reservations
* ``system``    — the reservation system: ids, submit/update/delete/list, apps in reservations, records
* ``stage``     — the pipeline stage that serves reservations first and lends what they do not use
* ``dra``       — dynamic reprovisioning;  ``skyline`` — the §5 LP;  ``inference`` — SLO proposals
* ``yarn``      — YARN's reservation JSON shapes (REST) to and from the types above
"""
