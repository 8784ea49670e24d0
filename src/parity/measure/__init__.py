"""Measuring: a request's sides prepared, scheduled in rounds under the budget, stopped
when the figures settle, resumed after an interruption; what it returns is a measured
comparison, which the API hands to the judge."""
