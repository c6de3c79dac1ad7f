"""What prewarm(group=...) needs of a torch.distributed process group: this
process's rank in it, its size, and an all-gather of byte strings for the
kernel exchange (jit/kernel_exchange.hpp), each collective bounded by
HCWARM_GROUP_TIMEOUT_S (else the group's own timeout). torch is imported here
only, and only when a group is given."""
from __future__ import annotations

import datetime
from typing import Any, Callable, List, Optional, Tuple

from . import _core

Gather = Callable[[bytes], List[bytes]]


def group_ops(group: Any) -> Tuple[int, int, Gather]:
    """(rank, world_size, gather) of `group` (a torch.distributed ProcessGroup, e.g. group.WORLD)."""
    try:
        import torch.distributed as dist
    except ImportError as e:
        raise ValueError("group: prewarm(group=...) takes a torch.distributed process group, "
                         "and PyTorch is not installed") from e
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError("group: torch.distributed is not initialized (call init_process_group first)")
    rank = dist.get_rank(group)
    world = dist.get_world_size(group)
    if not isinstance(rank, int) or not isinstance(world, int) or world < 1 or not 0 <= rank < world:
        raise ValueError(f"group: this process is not a member of the group (rank {rank!r} of {world!r})")
    return rank, world, make_gather(dist, group, rank, world, _core.group_timeout_s())


def make_gather(dist: Any, group: Any, rank: int, world: int, timeout_s: Optional[int]) -> Gather:
    """An all-gather of bytes over CPU tensors: on the group itself when its backend
    moves CPU tensors (gloo), else on a gloo group over the same ranks (e.g. for NCCL)."""
    import torch

    timeout = datetime.timedelta(seconds=timeout_s) if timeout_s else None
    side = group
    if "gloo" not in str(dist.get_backend(group)):
        kwargs = {"timeout": timeout} if timeout else {}
        side = dist.new_group(ranks=dist.get_process_group_ranks(group), backend="gloo",
                              use_local_synchronization=True, **kwargs)
    bound = f"HCWARM_GROUP_TIMEOUT_S={timeout_s}" if timeout_s else "the group's own timeout"

    def wait(work: Any, what: str) -> None:
        try:
            work.wait(timeout) if timeout else work.wait()
        except Exception as e:
            raise _core.WaitTimeoutError(
                f"kernel exchange: rank {rank} of {world} did not get {what} from every rank within {bound}: "
                f"a rank stopped, or is still compiling ({type(e).__name__}: {e})") from e

    def gather(mine: bytes) -> List[bytes]:
        size = torch.tensor([len(mine)], dtype=torch.int64)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        wait(dist.all_gather(sizes, size, group=side, async_op=True), "the payload sizes")
        counts = [int(s.item()) for s in sizes]
        buf = torch.zeros(max(max(counts), 1), dtype=torch.uint8)
        if mine:
            buf[:len(mine)] = torch.frombuffer(bytearray(mine), dtype=torch.uint8)
        outs = [torch.empty_like(buf) for _ in range(world)]
        wait(dist.all_gather(outs, buf, group=side, async_op=True), "the built kernels")
        if side is not group:  # one exchange per prewarm
            dist.destroy_process_group(side)
        return [o[:n].numpy().tobytes() for o, n in zip(outs, counts)]

    return gather
