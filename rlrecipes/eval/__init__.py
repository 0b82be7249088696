"""Evaluation: benchmarks, generation, grading into metrics, run directories, reports."""
