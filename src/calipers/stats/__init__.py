"""Pure statistics (layer 1): every function returns an :class:`~calipers.types.Estimate`.

Only numpy, scipy and statsmodels; randomness only through a ``numpy.random.Generator``
passed in. See ``docs/statistics.md`` for which interval is used when.
"""

from calipers.stats._bootstrap import bootstrap_mean
from calipers.stats._clustered import clustered_mean
from calipers.stats._proportion import beta_posterior, wilson
from calipers.stats._summarize import is_binary, summarize

__all__ = [
    "beta_posterior",
    "bootstrap_mean",
    "clustered_mean",
    "is_binary",
    "summarize",
    "wilson",
]
