"""Job-size estimation by sampling pilot tasks (SLearn), its history baseline (3Sigma-like) and GS's queues.

Pure building blocks, no I/O and no clock:

* ``sampling`` — how many pilot tasks and which, the size estimated from them, the Bayesian combination of a
  history prior with pilot samples, and the adaptive choice of the sampling ratio;
* ``gs`` — the generic scheduler's exponentially spaced size queues and their weights;
* ``history`` — a per-feature history predictor and its median (point) variant;
* ``dag`` — the DAG hybrid that rescales history estimates of later stages by what sampling measured.
"""
