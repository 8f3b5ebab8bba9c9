"""dpcore: differentially private synthetic data by STEPS and its comparators.

    >>> import dpcore
    >>> release = dpcore.synthesize(df, method="steps", epsilon=1.0, layers=2, sets=5)
    >>> release.sets[0].head(); release.ledger.epsilon; release.manifest()
    >>> dpcore.preview(df, layers=3).layers        # spends nothing

No Streamlit here: the app and the CLI (``python -m dpcore``) both call this API.
"""
from dpcore.api import METHODS, synthesize
from dpcore.data.domain import Attribute, Domain
from dpcore.data.inference import infer_domain
from dpcore.errors import DomainError, DPCoreError, InputError, OptionError, ResourceError
from dpcore.previews import MarginPreview, Preview, expected_noise, preview
from dpcore.privacy.ledger import Ledger
from dpcore.release import Release
from dpcore.synthesizers.allocation import allocate_budget
from dpcore.synthesizers.hierarchy import PhantomPaddedTree

__all__ = [
    "synthesize", "preview", "expected_noise", "Release", "Preview", "MarginPreview", "METHODS", "Domain", "Attribute",
    "infer_domain",
    "Ledger", "allocate_budget", "PhantomPaddedTree",
    "DPCoreError", "InputError", "DomainError", "OptionError", "ResourceError",
]
__version__ = "0.1.0"
