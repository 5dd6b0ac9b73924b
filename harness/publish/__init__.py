"""What leaves a run: curves and Pareto frontiers, tables at interactivity targets, the
regression gate, the end-of-sweep report, dashboards, exports in InferenceX and AIPerf formats,
and ingestion of InferenceX's published rows. Reads `harness.record`; never runs anything."""
