"""The simulated serving engine: profiles (data files), the engine, predict, fit; the HTTP server.

profile.py   Profile (cost model, acceptance, limits), load_profile, list_profiles
engine.py    Engine: discrete-event continuous batching with speculative decoding (virtual time)
predict.py   closed/open-loop client model over the engine -> RequestRecords -> bench metrics
fit.py       calibrate a profile's cost model to results (robust least squares on log errors)
"""
