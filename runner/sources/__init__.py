"""Where batches come from: newline-delimited JSON files (:mod:`runner.sources.files`) and
Kafka (:mod:`runner.sources.kafka`). Each reader returns a streaming DataFrame of one raw
``value`` string per record plus the source's metadata columns; parsing happens in
:mod:`runner.runtime.batches.parse`.
"""
