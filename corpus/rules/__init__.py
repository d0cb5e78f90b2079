"""Rule logic that more than one step (or the ablation) shares: C4's page rules, the measures of
today's rule sets, decontamination's n-grams. Logic one step uses lives in that step's module."""
