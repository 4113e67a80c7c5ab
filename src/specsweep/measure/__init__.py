"""One run's records -> its metrics: per request category, acceptance, steady state."""
