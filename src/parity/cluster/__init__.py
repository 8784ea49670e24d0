"""Sides on the nodes of a Ray cluster (``--cluster``, ``--place``).

Ray schedules; parity measures and judges. Each side gets one Ray actor on a node that
has its resource (``address``: the address, the resources asked for, the check that some
node offers them, all before anything runs). The actor (``node``) runs the side's jobs
there with the same launcher as on one machine, a zygote and forked repeats, so a side's
processes and timing never span two machines; the frozen workload travels through Ray's
object store. The driver (``sides``) keeps the rounds interleaved, writes each bundle the
actor sends back, and judges: the two sides' figures meet only as bundles. A node lost
while a side runs is that side's failure, with the reason.
"""
