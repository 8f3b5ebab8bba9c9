"""What every synthesizer shares: size limits on dense tables and drawing records from cells.

Synthesizers depend on this module, never on each other. Drawing records from cell
estimates belongs to the estimation layer: :func:`dpcore.estimate.table.draw_cells` and
:func:`dpcore.estimate.table.cell_codes` (where the dense model samples with them), and the
released set's form, the cell counts drawn at once and the records dealt in chunks
(:func:`dpcore.estimate.table.cell_counts`, :func:`dpcore.estimate.draws.cell_draw`); the
synthesizers that estimate a table without an estimator (STEPS, flat Laplace) import them
from there. Privacy: nothing here reads records.
"""
from __future__ import annotations

from dpcore.data.domain import Domain
from dpcore.errors import ResourceError

__all__ = ["DEFAULT_MAX_CELLS", "BYTES_PER_LEAF_CELL", "big_count", "check_cells"]

#: Largest dense table (cells) a release may allocate.
DEFAULT_MAX_CELLS = 20_000_000
#: ~9 float64/int64 arrays live per leaf cell during a release
BYTES_PER_LEAF_CELL = 72


def big_count(n: int) -> str:
    """A possibly astronomically large exact int for a message ("2,000" or "about 10^602"):
    formatting it as a float would overflow."""
    n = int(n)
    return f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"


def check_cells(domain: Domain, max_cells: int) -> int:
    cells = domain.size
    if cells > max_cells:
        big = sorted(domain.attributes, key=lambda a: -a.size)[:3]
        raise ResourceError(
            f"the full cross-tabulation has {big_count(cells)} cells (limit {max_cells:,}, about "
            f"{big_count(cells * BYTES_PER_LEAF_CELL // 2**30).removeprefix('about ')} GB); drop attributes with many "
            f"levels ({', '.join(f'{a.name} ({a.size} levels)' for a in big)}) or coarsen their bins"
        )
    return cells
