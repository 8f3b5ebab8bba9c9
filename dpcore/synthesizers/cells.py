"""What every synthesizer shares: size limits on dense tables and drawing records from cells.

Synthesizers depend on this module, never on each other. Drawing records from cell
estimates (:func:`draw_cells`, :func:`cell_codes`) belongs to the estimation layer
(:mod:`dpcore.estimate.table`, where the dense model samples with them); they are named here
for the synthesizers that estimate a table without an estimator (STEPS, flat Laplace), with
the released set's form: the cell counts drawn at once and the records dealt in chunks
(:func:`cell_counts`, :func:`cell_draw`; :mod:`dpcore.estimate.draws`).
Privacy: nothing here reads records; :func:`draw_cells` is post-processing of
already-noisy cell estimates.
"""
from __future__ import annotations

from dpcore.data.domain import Domain
from dpcore.errors import ResourceError
from dpcore.estimate.draws import CellDraw, cell_draw
from dpcore.estimate.table import cell_codes, cell_counts, draw_cells

__all__ = ["DEFAULT_MAX_CELLS", "BYTES_PER_LEAF_CELL", "big_count", "check_cells", "draw_cells", "cell_codes",
           "cell_counts", "cell_draw", "CellDraw"]

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
