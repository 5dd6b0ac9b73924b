"""NVIDIA telemetry from `nvidia-smi`'s query loop, the form InferenceX's start_gpu_monitor
uses (SemiAnalysisAI/InferenceX:benchmarks/benchmark_lib.sh@000e6326, docs/upstream/inferencex.md
§2): one long-running process printing one CSV row per GPU per
period, stamped by nvidia-smi itself ("YYYY/MM/DD HH:MM:SS.fff", local time)."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime

from harness.telemetry.base import GpuReading, TelemetrySampler, wall_to_perf

FIELDS = ("index", "timestamp", "power.draw", "utilization.gpu", "memory.used")
TOOL = "nvidia-smi"
# The SM clock and why clocks are held down (NVML's nvmlClocksEventReasons bitmask, printed as
# hex). Drivers from R535 name the mask clocks_event_reasons.active; older ones only
# clocks_throttle_reasons.active (the name newer ones keep as deprecated). An unknown field
# fails the whole query, so the sampler asks once which the driver takes (`clock_fields`).
CLOCK_FIELD_SETS = (("clocks.sm", "clocks_event_reasons.active"),
                    ("clocks.sm", "clocks_throttle_reasons.active"))


def command(period_s: float, tool: str = TOOL,
            fields: tuple[str, ...] = FIELDS) -> list[str]:
    return [tool, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
            "-lms", str(max(1, round(period_s * 1000)))]


def clock_fields(tool: str = TOOL) -> tuple[str, ...]:
    """The clock fields this driver answers (one row of the right width, exit 0), else ()."""
    for extra in CLOCK_FIELD_SETS:
        try:
            out = subprocess.run([tool, f"--query-gpu=index,{','.join(extra)}",
                                  "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return ()
        rows = [r for r in out.stdout.splitlines() if r.strip()]
        if out.returncode == 0 and rows and len(rows[0].split(",")) == 1 + len(extra):
            return extra
    return ()


def _mask(text: str) -> int | None:
    """A bitmask cell ("0x0000000000000004"); None for "[N/A]"/"[Not Supported]"."""
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


def parse_timestamp(text: str) -> float | None:
    """nvidia-smi's timestamp as epoch seconds (it prints local time without a zone)."""
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), fmt).timestamp()
        except ValueError:
            pass
    return None


def _number(text: str) -> float | None:
    """A value cell; nvidia-smi prints "[N/A]" or "[Not Supported]" where it has none."""
    try:
        return float(text.strip().removesuffix(" W").removesuffix(" %").removesuffix(" MiB"))
    except ValueError:
        return None


def parse_line(line: str, offset: float,
               fields: tuple[str, ...] = FIELDS) -> GpuReading | None:
    """One CSV row (`fields`: FIELDS, then any of CLOCK_FIELD_SETS; noheader, nounits) as a
    reading on the perf clock; None for a header, blank or malformed row."""
    cells = [c.strip() for c in line.split(",")]
    if len(cells) != len(fields) or not cells[0].isdigit():
        return None
    wall = parse_timestamp(cells[1])
    if wall is None:
        return None
    cell = dict(zip(fields, cells, strict=True))
    reasons = cell.get("clocks_event_reasons.active", cell.get("clocks_throttle_reasons.active"))
    return GpuReading(wall + offset, cells[0], _number(cells[2]), _number(cells[3]),
                      _number(cells[4]),
                      _number(cell["clocks.sm"]) if "clocks.sm" in cell else None,
                      _mask(reasons) if reasons is not None else None)


class NvidiaSmiSampler(TelemetrySampler):
    source = TOOL

    def __init__(self, period_s: float = 1.0, tool: str = TOOL) -> None:
        super().__init__(period_s)
        self.tool = tool
        self.fields = FIELDS
        self._proc: subprocess.Popen[str] | None = None

    def _run(self) -> None:
        """Read the loop's rows; a loop that exits is restarted after one period (a gap)."""
        self.fields = FIELDS + clock_fields(self.tool)
        while not self._stop.is_set():
            offset = wall_to_perf()
            self._proc = subprocess.Popen(command(self.period_s, self.tool, self.fields),
                                          text=True, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE)
            assert self._proc.stdout is not None
            for line in self._proc.stdout:
                reading = parse_line(line, offset, self.fields)
                if reading is not None:
                    self.readings.append(reading)
            rc = self._proc.wait()
            if not self._stop.is_set():
                err = self._proc.stderr.read() if self._proc.stderr else ""
                self.note_error(f"{self.tool} exited with {rc}: {err.strip()[-200:]}")
                self._stop.wait(self.period_s)

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._thread.join(timeout=10)


def available(tool: str = TOOL) -> str:
    """Why `nvidia-smi` cannot be used here, or '' when it lists at least one GPU."""
    path = shutil.which(tool)
    if path is None:
        return f"{tool} is not on PATH"
    try:
        out = subprocess.run([path, "--query-gpu=index", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{tool} did not answer ({e})"
    if out.returncode != 0 or not out.stdout.strip():
        return f"{tool} lists no GPU (exit {out.returncode}: {out.stderr.strip()[-200:]})"
    return ""


