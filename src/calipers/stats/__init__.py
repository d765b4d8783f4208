"""Pure statistics (layer 1): every function returns an :class:`~calipers.types.Estimate`.

Only numpy, scipy and statsmodels; randomness only through a ``numpy.random.Generator``
passed in. See ``docs/statistics.md`` for which interval is used when.

Names load on first use (``calipers._util.lazy``): a Wilson interval does not import the
drift tests' or the agreement statistics' dependencies.
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports

if TYPE_CHECKING:
    from calipers.stats._agreement import (
        CorrelationTest,
        PositionBias,
        cohens_kappa,
        krippendorff_alpha,
        length_bias,
        position_bias,
    )
    from calipers.stats._bootstrap import bootstrap_mean
    from calipers.stats._bradley_terry import BradleyTerry, PairRecord, RatedModel, bradley_terry
    from calipers.stats._clustered import clustered_mean
    from calipers.stats._dawid_skene import DawidSkene, dawid_skene
    from calipers.stats._drift import (
        DriftTest,
        adjust_drift,
        chi2_drift,
        classifier_drift,
        ks_drift,
        mmd2_unbiased,
        mmd_drift,
        psi,
        psi_drift,
    )
    from calipers.stats._items import (
        item_difficulty,
        item_rest_correlations,
        point_biserial,
        subset_difference,
        uniform_items,
    )
    from calipers.stats._knee import Knee, knee
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
    from calipers.stats._ppi import PPIResult, ppi_difference, ppi_lambda, ppi_mean
    from calipers.stats._proportion import beta_posterior, wilson
    from calipers.stats._quantile import order_statistic_ranks, quantile_interval
    from calipers.stats._ranking import Leaderboard, RankedModel, rank_models
    from calipers.stats._rater_qc import (
        RaterFlag,
        first_flag,
        gold_accuracy,
        left_share,
        rater_flag,
        self_consistency,
    )
    from calipers.stats._sequential import (
        Decision,
        Guardrail,
        GuardrailStatus,
        SequentialPath,
        SequentialTest,
        guardrail_verdict,
        msprt_paired,
        msprt_paired_path,
        msprt_two_sample,
        msprt_two_sample_path,
    )
    from calipers.stats._sequential import decide as decide_rollout
    from calipers.stats._summarize import is_binary, summarize
    from calipers.stats._trend import TrendTest, cochran_armitage
    from calipers.stats._unpaired import newcombe_unpaired, unpaired_difference

_MODULES = {
    "CorrelationTest": "_agreement",
    "DawidSkene": "_dawid_skene",
    "Decision": "_sequential",
    "DriftTest": "_drift",
    "Guardrail": "_sequential",
    "GuardrailStatus": "_sequential",
    "Knee": "_knee",
    "Leaderboard": "_ranking",
    "PPIResult": "_ppi",
    "PairedResult": "_paired",
    "PositionBias": "_agreement",
    "RankedModel": "_ranking",
    "RaterFlag": "_rater_qc",
    "SequentialPath": "_sequential",
    "SequentialTest": "_sequential",
    "TrendTest": "_trend",
    "BradleyTerry": "_bradley_terry",
    "PairRecord": "_bradley_terry",
    "RatedModel": "_bradley_terry",
    "adjust": "_multiple",
    "adjust_drift": "_drift",
    "beta_posterior": "_proportion",
    "bootstrap_mean": "_bootstrap",
    "bradley_terry": "_bradley_terry",
    "chi2_drift": "_drift",
    "classifier_drift": "_drift",
    "clustered_mean": "_clustered",
    "cochran_armitage": "_trend",
    "cohens_kappa": "_agreement",
    "dawid_skene": "_dawid_skene",
    "decide_rollout": "_sequential",
    "first_flag": "_rater_qc",
    "gold_accuracy": "_rater_qc",
    "guardrail_verdict": "_sequential",
    "is_binary": "_summarize",
    "item_difficulty": "_items",
    "item_rest_correlations": "_items",
    "knee": "_knee",
    "krippendorff_alpha": "_agreement",
    "ks_drift": "_drift",
    "left_share": "_rater_qc",
    "length_bias": "_agreement",
    "mde_paired": "_power",
    "mmd2_unbiased": "_drift",
    "mmd_drift": "_drift",
    "msprt_paired": "_sequential",
    "msprt_paired_path": "_sequential",
    "msprt_two_sample": "_sequential",
    "msprt_two_sample_path": "_sequential",
    "newcombe_interval": "_paired",
    "newcombe_unpaired": "_unpaired",
    "order_statistic_ranks": "_quantile",
    "paired_bootstrap": "_paired",
    "paired_compare": "_paired",
    "pass_at_k": "_passk",
    "pass_at_k_estimate": "_passk",
    "point_biserial": "_items",
    "position_bias": "_agreement",
    "ppi_difference": "_ppi",
    "ppi_lambda": "_ppi",
    "ppi_mean": "_ppi",
    "psi": "_drift",
    "psi_drift": "_drift",
    "quantile_interval": "_quantile",
    "rank_models": "_ranking",
    "rater_flag": "_rater_qc",
    "sample_size_paired": "_power",
    "self_consistency": "_rater_qc",
    "sign_flip_pvalue": "_paired",
    "subset_difference": "_items",
    "summarize": "_summarize",
    "uniform_items": "_items",
    "unpaired_difference": "_unpaired",
    "unpaired_sample_size": "_power",
    "wilson": "_proportion",
}

__all__ = [
    "BradleyTerry",
    "CorrelationTest",
    "DawidSkene",
    "Decision",
    "DriftTest",
    "Guardrail",
    "GuardrailStatus",
    "Knee",
    "Leaderboard",
    "PPIResult",
    "PairRecord",
    "PairedResult",
    "PositionBias",
    "RankedModel",
    "RatedModel",
    "RaterFlag",
    "SequentialPath",
    "SequentialTest",
    "TrendTest",
    "adjust",
    "adjust_drift",
    "beta_posterior",
    "bootstrap_mean",
    "bradley_terry",
    "chi2_drift",
    "classifier_drift",
    "clustered_mean",
    "cochran_armitage",
    "cohens_kappa",
    "dawid_skene",
    "decide_rollout",
    "first_flag",
    "gold_accuracy",
    "guardrail_verdict",
    "is_binary",
    "item_difficulty",
    "item_rest_correlations",
    "knee",
    "krippendorff_alpha",
    "ks_drift",
    "left_share",
    "length_bias",
    "mde_paired",
    "mmd2_unbiased",
    "mmd_drift",
    "msprt_paired",
    "msprt_paired_path",
    "msprt_two_sample",
    "msprt_two_sample_path",
    "newcombe_interval",
    "newcombe_unpaired",
    "order_statistic_ranks",
    "paired_bootstrap",
    "paired_compare",
    "pass_at_k",
    "pass_at_k_estimate",
    "point_biserial",
    "position_bias",
    "ppi_difference",
    "ppi_lambda",
    "ppi_mean",
    "psi",
    "psi_drift",
    "quantile_interval",
    "rank_models",
    "rater_flag",
    "sample_size_paired",
    "self_consistency",
    "sign_flip_pvalue",
    "subset_difference",
    "summarize",
    "uniform_items",
    "unpaired_difference",
    "unpaired_sample_size",
    "wilson",
]

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, renamed={"decide_rollout": "decide"})
