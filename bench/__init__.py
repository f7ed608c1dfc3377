"""Benchmarks: scenarios and the scripts that time them; results are printed, never asserted."""
