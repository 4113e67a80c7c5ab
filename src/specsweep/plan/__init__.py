"""Deployment planning (``specsweep plan``): from results and a traffic description to compared
deployment options (one config, a fleet split by input length, load-adaptive), their replay on the
simulator, and a router config. See docs/planning.md."""
