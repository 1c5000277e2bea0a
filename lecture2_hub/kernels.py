"""At most `max_kernels` kernels at once in a student's lab (StudentLimits.kernels): one more is refused with a
message that says how to free one. The student's server uses this kernel manager (the hub's student config); her
memory, CPU and processes are bounded by her cgroup whatever she starts, this keeps a forgotten tab from holding a
kernel's memory."""
from __future__ import annotations

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Int


class CappedKernelManager(AsyncMappingKernelManager):
    max_kernels = Int(3, config=True, help="kernels running at once; one more is refused (HTTP 403)")

    async def _async_start_kernel(self, *, kernel_id=None, path=None, **kwargs):
        if kernel_id is None and len(self.list_kernel_ids()) >= self.max_kernels:
            raise web.HTTPError(403, f"at most {self.max_kernels} kernels run at once in your lab: shut one down "
                                     "(Running Terminals and Kernels, the left side bar) and try again")
        return await super()._async_start_kernel(kernel_id=kernel_id, path=path, **kwargs)

    start_kernel = _async_start_kernel
