"""`cgtool lint`'s core: configuration, finding filters, and the run over many scripts."""
