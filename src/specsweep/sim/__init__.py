"""The simulated serving engine: profiles (data files), the engine, predict, fit; the HTTP server.

profile.py     Profile (cost model, acceptance, limits), load_profile, list_profiles
engine.py      Engine: discrete-event continuous batching with speculative decoding (virtual time)
predict.py     closed/open-loop client model over the engine -> RequestRecords -> bench metrics
fit*.py        calibrate a profile's cost model to results (robust least squares on log errors)
settings.py    SimConfig: what a sim server is started with
driver.py      EngineDriver: the engine against the wall clock, chunks written to the sockets, truth file
server.py      SimServer: the HTTP endpoints (parse -> gate -> admit -> stream); start_server
serve.py       `sim serve` as a process (flags, signals) and SubprocessServer
reqparse.py    request bodies -> Generation (vLLM's and SGLang's validation and errors)
responses.py   reply bodies (probes, errors, non-stream results); wire.py: stream chunk encoders
"""
