"""What every transcribed InferenceX script shares: the expected-command type and the values
the golden catalog substitutes (tests/test_catalog_golden.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

H, PORT = "127.0.0.1", "8888"
ISL, OSL = 8192, 1024
MAX_MODEL_LEN = ISL + OSL + 200  # the matrix generator's max-model-len
FP4 = "nvidia/DeepSeek-R1-0528-FP4-V2"
FP8 = "deepseek-ai/DeepSeek-R1-0528"
MXFP4 = "amd/DeepSeek-R1-0528-MXFP4"
MXFP4_PREVIEW = "amd/DeepSeek-R1-0528-MXFP4-Preview"
NV = "nvidia-master.yaml@11776f53"
AMD = "amd-master.yaml@7efe2986"


@dataclass
class Cmd:
    argv: list[str]
    env: dict[str, str]
    yaml: dict[str, Any] | None = None
    prefix: int = 3  # leading arguments compared in order (program, module, positionals)


def sri(conc: int) -> str:
    """--scheduler-recv-interval: `if [[ $CONC -ge 16 ]]; then 30 else 10`."""
    return "30" if conc >= 16 else "10"


def ceil64(x: int) -> int:
    return (x + 63) // 64 * 64


SGLANG = ["python3", "-m", "sglang.launch_server"]

