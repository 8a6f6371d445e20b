"""How and where runs execute.

One attempt and its run folder, the local process pool, Ray and SLURM, run folder leases, GPU placement.
"""
