"""Nothing leaves the machine: loading and running the embedding model sends no onnxruntime telemetry.

onnxruntime's official builds (1.29+ on Linux) start a 1DS telemetry client when a session is
created: it resolves ``mobile.events.data.microsoft.com`` and writes a device id under
``~/.cache/Microsoft/DeveloperTools/.onnxruntime``. Its supported switch is the environment variable
``ORT_DISABLE_TELEMETRY``, which :mod:`ccmemory.embeddings` sets before onnxruntime can load.
The control run shows the same model loaded without ccmemory's switch does write the device id,
so the check would catch a regression. onnxruntime also stays quiet wherever ``CI`` is set, so both
runs drop that variable: the machine they stand for is a user's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from testing.env import isolated_env

TELEMETRY_DIR = Path(".cache", "Microsoft")


def _run(code: str, home: Path, *, env_extra: dict[str, str] | None = None) -> None:
    env = {k: v for k, v in isolated_env(home / "data", user_home=home, XDG_CACHE_HOME=str(home / ".cache")).items()
           if k not in ("ORT_DISABLE_TELEMETRY", "CI")}
    env.update(env_extra or {})
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_embedding_model_writes_no_device_id_and_switches_telemetry_off(tmp_path: Path) -> None:
    home = tmp_path
    _run("import os\nfrom ccmemory import embeddings\n"
         "model = embeddings.Embedder(embeddings.ModelSpec())\n"
         "assert model.dims == 384\n"
         "assert os.environ['ORT_DISABLE_TELEMETRY'] == '1'\n", home)
    assert not (home / TELEMETRY_DIR).exists()


def test_control_without_the_switch_onnxruntime_writes_a_device_id(tmp_path: Path) -> None:
    home = tmp_path
    # onnxruntime reads the switch when it loads: imported before ccmemory, it has telemetry on.
    _run("import os, glob, onnxruntime\n"
         "from ccmemory.embeddings import builtin_model_dir\n"
         "model = glob.glob(os.path.join(str(builtin_model_dir()), '**', '*.onnx'), recursive=True)[0]\n"
         "onnxruntime.InferenceSession(model)\n", home)
    assert (home / TELEMETRY_DIR).exists()
