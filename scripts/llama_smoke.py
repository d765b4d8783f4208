"""Exit 0 when llama.cpp loads the embedded SmolLM2 and generates a token on this CPU, non-zero
when it crashes (the model runs in a child process, so a SIGSEGV is an exit code, not CI's end)."""

import subprocess
import sys

CHILD = """
from llama_cpp import Llama
from calipers.models._gguf import bundled_smollm2
llama = Llama(model_path=str(bundled_smollm2()), n_ctx=128, n_threads=1, verbose=False)
llama.create_completion("The capital of France is", max_tokens=2)
"""

proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
if proc.returncode != 0:
    print(f"llama.cpp smoke test failed (exit {proc.returncode}): {proc.stderr[-500:]}")
sys.exit(0 if proc.returncode == 0 else 1)
