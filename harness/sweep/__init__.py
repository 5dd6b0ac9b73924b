"""Running a sweep: the Hydra application, one job (an engine launch and its points), each
point's assembly from what was measured, its time series, acceptance calibration, and the
Ctrl-C that is never lost. The only package that ties engines, workloads and the client
together."""
