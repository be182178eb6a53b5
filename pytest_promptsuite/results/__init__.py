"""The results stage: the rows, their statistics, the comparison with a baseline, and the gate."""
