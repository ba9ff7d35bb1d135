"""Great Expectations validation: one runner and report (:mod:`.core`), the stream dataset
contract's suite (:mod:`.datasets`) and the results contract's suite (:mod:`.results`), whose
family-specific rules live in each family's ``expectations`` module.

Importing this package loads Great Expectations (seconds); import it only to validate.
"""

from skewbench.validation.core import ValidationReport
from skewbench.validation.datasets import validate_dataset, zipf_table
from skewbench.validation.results import ResultsValidationReport, validate_results

__all__ = ["ResultsValidationReport", "ValidationReport", "validate_dataset", "validate_results", "zipf_table"]
