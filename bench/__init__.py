"""Benchmarks and long-running checks of the runner, run from the repository root as
``python -m bench.<name>`` (``python -m bench.stream_bench --help``). What they share lives in
:mod:`bench.common`; each writes one current result, ``bench/results/<name>-<UTC date>-<git
short sha>.json`` (older results live in git history). Benches may import ``tests.support``
(the reference, fixture projects, brokers); tests never import ``bench``."""
