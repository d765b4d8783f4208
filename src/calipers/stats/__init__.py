"""Pure statistics (layer 1): every function returns an :class:`~calipers.types.Estimate`.

Only numpy, scipy and statsmodels; randomness only through a ``numpy.random.Generator``
passed in. See ``docs/statistics.md`` for which interval is used when.
"""

from calipers.stats._bootstrap import bootstrap_mean
from calipers.stats._clustered import clustered_mean
from calipers.stats._multiple import adjust
from calipers.stats._paired import (
    PairedResult,
    newcombe_interval,
    paired_bootstrap,
    paired_compare,
    sign_flip_pvalue,
)
from calipers.stats._passk import pass_at_k, pass_at_k_estimate
from calipers.stats._power import mde_paired, sample_size_paired, unpaired_sample_size
from calipers.stats._proportion import beta_posterior, wilson
from calipers.stats._quantile import order_statistic_ranks, quantile_interval
from calipers.stats._ranking import Leaderboard, RankedModel, rank_models
from calipers.stats._summarize import is_binary, summarize

__all__ = [
    "Leaderboard",
    "PairedResult",
    "RankedModel",
    "adjust",
    "beta_posterior",
    "bootstrap_mean",
    "clustered_mean",
    "is_binary",
    "mde_paired",
    "newcombe_interval",
    "order_statistic_ranks",
    "paired_bootstrap",
    "paired_compare",
    "pass_at_k",
    "pass_at_k_estimate",
    "quantile_interval",
    "rank_models",
    "sample_size_paired",
    "sign_flip_pvalue",
    "summarize",
    "unpaired_sample_size",
    "wilson",
]
