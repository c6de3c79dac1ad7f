"""What prewarm(group=...) needs of a torch.distributed process group: this
process's rank in it, its size, and its barrier. torch is imported here only,
and only when a group is given."""
from __future__ import annotations

from typing import Any, Callable, Tuple


def group_ops(group: Any) -> Tuple[int, int, Callable[[], None]]:
    """(rank, world_size, barrier) of `group` (a torch.distributed ProcessGroup, e.g. group.WORLD)."""
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
    return rank, world, lambda: dist.barrier(group=group)
