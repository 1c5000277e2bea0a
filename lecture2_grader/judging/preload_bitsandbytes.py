"""bitsandbytes, imported once by the judges' fork server for a run that grades notebook 06 (launch.PRELOAD_FOR).
Notebook 06's checks step its 8-bit Adam, and it takes about three seconds to import (it compiles its CPU kernels' wrappers with torch.compile, which imports torch._dynamo
and torch._inductor), so a run that grades notebook 06 imports it once rather than in every judge, and a run that
does not never pays for it. Only where there is no NVIDIA GPU: it may initialise CUDA as it loads, and a process
forked after that cannot use CUDA."""
from __future__ import annotations

import glob
import logging

if not glob.glob("/dev/nvidia[0-9]*"):
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    try:
        import bitsandbytes  # noqa: F401
    except Exception:  # noqa: BLE001  not installed, or it fails here: the check that needs it imports it and says so
        pass
