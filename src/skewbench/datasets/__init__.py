"""Stream datasets: the contract (:mod:`.contract`), generators, trace ingestion, catalog."""
